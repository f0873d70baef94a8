//! The term index: an [`Analyzer`] that turns text into terms, and `TermIndex`, the
//! inverted index the SQLite store's search cache keeps over its valid facts, so retrieval
//! scores only the facts that share a term with the query. (The in-memory store keeps a
//! compact index of its own, `memory/terms.rs`, that answers exactly as this one.)
//!
//! Scoring formulas are not the store's business: a [`TermWeighting`] (keyword overlap,
//! BM25, …) supplies them, and the store applies them term at a time over its postings.
//! Every score is a sum, in query-term order, of `term_weight × tf_weight` over the query
//! terms a fact contains, so a brute-force scan with the same weighting gives the same
//! numbers bit for bit.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Debug;

use fact_model::{FactId, Filter, SessionFact, Tag, Tags, Timestamp};
use rust_stemmers::{Algorithm, Stemmer};

/// Calls `f(word, plain)` for every word of `text`: runs of letters and digits, where a
/// run of ASCII letters followed by `:` and digits is one word, an id (`task:12`,
/// `issue:7`). Ids name things: `task:12` matches `task:12`, not every text that says
/// "task". `plain` says the word is lowercase ASCII letters, digits and `:` only, so it
/// needs no lowercasing.
///
/// One pass over the bytes, decoding a `char` only at non-ASCII bytes (most text is
/// ASCII): this runs over every field of every fact the store indexes.
fn scan_words<'t>(text: &'t str, mut f: impl FnMut(&'t str, bool)) {
    let bytes = text.as_bytes();
    let char_at = |at: usize| text.get(at..).and_then(|rest| rest.chars().next());
    let rest = |at: usize| bytes.get(at..).unwrap_or_default();
    let mut at = 0;
    loop {
        // Skip to the start of a word: ASCII separators in a run, anything else a char at
        // a time.
        match rest(at)
            .iter()
            .position(|b| b.is_ascii_alphanumeric() || !b.is_ascii())
        {
            Some(skip) => at += skip,
            None => return,
        }
        if bytes.get(at).is_some_and(|b| !b.is_ascii())
            && let Some(c) = char_at(at)
            && !c.is_alphanumeric()
        {
            at += c.len_utf8();
            continue;
        }
        let start = at;
        // Lowercase ASCII, digits and `:` only; ASCII letters only.
        let (mut plain, mut letters) = (true, true);
        loop {
            let run = rest(at).iter().position(|&b| {
                if b.is_ascii_lowercase() {
                    false
                } else if b.is_ascii_uppercase() {
                    plain = false;
                    false
                } else if b.is_ascii_digit() {
                    letters = false;
                    false
                } else {
                    true
                }
            });
            match run {
                None => {
                    at = bytes.len();
                    break;
                }
                Some(run) => at += run,
            }
            // The run stopped at an ASCII separator, or at a char to decode.
            if bytes.get(at).is_none_or(u8::is_ascii) {
                break;
            }
            match char_at(at) {
                Some(c) if c.is_alphanumeric() => {
                    (plain, letters) = (false, false);
                    at += c.len_utf8();
                }
                _ => break,
            }
        }
        if letters && bytes.get(at) == Some(&b':') {
            let digits = rest(at + 1)
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 {
                at += 1 + digits;
            }
        }
        if let Some(word) = text.get(start..at) {
            f(word, plain);
        }
    }
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

/// The longest stopword, in bytes.
const STOPWORD_MAX: usize = 5;

/// The bytes of a word of at most 8 bytes, little-endian, zero-padded (as
/// [`pack_word`] packs them), at compile time.
const fn pack_small(mut word: &[u8]) -> u64 {
    let mut key = 0u64;
    let mut shift = 0;
    while let [first, rest @ ..] = word {
        key |= (*first as u64) << shift;
        shift += 8;
        word = rest;
    }
    key
}

/// The slot of a packed stopword in [`STOPWORD_SET`].
const fn stopword_slot(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as usize
}

/// [`STOPWORDS`] packed into an open-addressing set of 128 slots (0 is empty): the
/// stopword test, which runs for every word of every fact, is a multiply and a probe or
/// two in one kilobyte.
// Evaluated at compile time: an index out of bounds is a build error, not a panic.
#[allow(clippy::indexing_slicing)]
const STOPWORD_SET: [u64; 128] = {
    let mut set = [0u64; 128];
    let mut i = 0;
    while i < STOPWORDS.len() {
        assert!(STOPWORDS[i].len() <= STOPWORD_MAX);
        let key = pack_small(STOPWORDS[i].as_bytes());
        let mut at = stopword_slot(key);
        while set[at] != 0 {
            at = (at + 1) % 128;
        }
        set[at] = key;
        i += 1;
    }
    set
};

/// Whether a lowercased word is a stopword.
fn is_stopword(word: &str) -> bool {
    if word.len() > STOPWORD_MAX {
        return false;
    }
    let key = pack_word(word.as_bytes()).unwrap_or(0) as u64;
    let mut at = stopword_slot(key);
    while let Some(&slot) = STOPWORD_SET.get(at) {
        if slot == 0 {
            return false;
        }
        if slot == key {
            return true;
        }
        at = (at + 1) % STOPWORD_SET.len();
    }
    false
}

/// The bytes of a word of at most 16 bytes, little-endian in a `u128`, zero-padded; `None`
/// for a longer word. Words never contain NUL, so two words have equal keys exactly when
/// they are equal: an index can compare (and hash) short words as integers.
pub(crate) fn pack_word(word: &[u8]) -> Option<u128> {
    let read8 = |at: usize| {
        word.get(at..at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, u64::from_le_bytes)
    };
    let read4 = |at: usize| {
        word.get(at..at + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
    };
    let len = word.len();
    let (lo, hi) = match len {
        0..=3 => {
            let mut lo = 0u64;
            for (i, byte) in word.iter().enumerate() {
                lo |= u64::from(*byte) << (8 * i);
            }
            (lo, 0)
        }
        // Two overlapping reads; the bytes they share are equal, so `|` keeps them.
        4..=7 => (read4(0) | (read4(len - 4) << (8 * (len - 4))), 0),
        8 => (read8(0), 0),
        // The second read holds bytes `len - 8 .. len`; shifting out those below 8 leaves
        // bytes `8 .. len` from the bottom.
        9..=16 => (read8(0), read8(len - 8) >> (8 * (16 - len))),
        _ => return None,
    };
    Some(u128::from(lo) | (u128::from(hi) << 64))
}

/// How text becomes index terms.
///
/// ```
/// use fact_store::AnalyzerConfig;
///
/// let config = AnalyzerConfig::default().with_stemming(false);
/// assert!(!config.stemming);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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

impl AnalyzerConfig {
    /// Stems English words (`true`) or keeps every word as it is.
    #[must_use]
    pub fn with_stemming(mut self, stemming: bool) -> Self {
        self.stemming = stemming;
        self
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
/// let plain = Analyzer::new(AnalyzerConfig::default().with_stemming(false));
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
    pub fn for_each_word(&self, text: &str, mut f: impl FnMut(&str)) {
        let mut lower = String::new();
        scan_words(text, |word, plain| {
            // Words already lowercase ASCII (most of them) need no copy.
            if plain {
                if !is_stopword(word) {
                    f(word);
                }
                return;
            }
            lower.clear();
            if word.is_ascii() {
                lower.push_str(word);
                lower.make_ascii_lowercase();
            } else {
                lower.extend(word.chars().flat_map(char::to_lowercase));
            }
            if !is_stopword(&lower) {
                f(&lower);
            }
        });
    }

    /// The term of a lowercased word: its stem when stemming is on and it is an ASCII word
    /// (the Snowball English stemmer is for English); the word itself otherwise.
    pub fn term_of(&self, word: &str) -> String {
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

    /// An upper bound of [`tf_weight`](Self::tf_weight) over every input, when there is
    /// one (default `None`). With a bound, a search through a database's full-text index
    /// reads the candidates of its rarest terms first and stops before those of common
    /// terms once no fact holding only them could rank (the results do not change); a
    /// bound that some input exceeds makes such searches miss results.
    fn max_tf_weight(&self) -> Option<f64> {
        None
    }

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

/// Recency, opt-in: a fact's score times `0.5^(age / half_life)`, its age the time from
/// its `valid_from` to the reference instant (none for a fact newer than it). A fact as old
/// as the half-life counts half; the order of equally old facts does not change.
///
/// ```
/// use fact_model::Timestamp;
/// use fact_store::Recency;
///
/// let day = 86_400;
/// let now = Timestamp::from_unix_secs(30 * day).unwrap();
/// let recency = Recency::new(30 * day as u64, now).unwrap();
/// assert_eq!(recency.factor(Timestamp::from_unix_secs(0).unwrap()), 0.5);
/// assert_eq!(recency.factor(now), 1.0);
/// assert!(Recency::new(0, now).is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Recency {
    half_life_secs: f64,
    reference: Timestamp,
}

impl Recency {
    /// Halves a score every `half_life_secs` seconds of age before `reference`; `None` for
    /// a half-life of zero.
    #[must_use]
    pub fn new(half_life_secs: u64, reference: Timestamp) -> Option<Self> {
        (half_life_secs > 0).then_some(Recency {
            half_life_secs: half_life_secs as f64,
            reference,
        })
    }

    /// The half-life, in seconds.
    #[must_use]
    pub fn half_life_secs(&self) -> f64 {
        self.half_life_secs
    }

    /// The instant ages are measured to.
    #[must_use]
    pub fn reference(&self) -> Timestamp {
        self.reference
    }

    /// What a score of a fact true from `valid_from` is multiplied by, in `0..=1`.
    #[must_use]
    pub fn factor(&self, valid_from: Timestamp) -> f64 {
        let age_micros = self
            .reference
            .unix_micros()
            .saturating_sub(valid_from.unix_micros());
        if age_micros <= 0 {
            return 1.0;
        }
        let age = age_micros as f64 / 1e6;
        0.5f64.powf(age / self.half_life_secs)
    }

    /// `score` decayed for a fact true from `valid_from` (`score` without recency).
    #[must_use]
    pub fn apply(recency: Option<&Recency>, score: f64, valid_from: Timestamp) -> f64 {
        recency.map_or(score, |r| score * r.factor(valid_from))
    }
}

/// What to search for; see [`SessionFactStore::search`](crate::SessionFactStore::search).
///
/// ```
/// use fact_model::Tag;
/// use fact_store::TermQuery;
///
/// let query = TermQuery::new("retry backoff", 5).with_tags(&[Tag::Decision]);
/// assert_eq!((query.text, query.limit), ("retry backoff", 5));
/// assert_eq!(query.tags, Some(&[Tag::Decision][..]));
/// assert!(query.as_of.is_none() && query.exclude_source_task.is_none());
/// assert!(query.filter.is_none());
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
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
    /// Keep only facts this filter holds for (`None`: no filter). A store applies it while
    /// it ranks, never to the results afterwards: when more than `limit` facts match, a
    /// search returns `limit` of them.
    pub filter: Option<&'a Filter>,
    /// Multiply each fact's score by its recency factor (`None`: scores as they are). A
    /// store ranks by the decayed scores and returns them.
    pub recency: Option<Recency>,
    /// The most facts to return.
    pub limit: usize,
}

impl<'a> TermQuery<'a> {
    /// A query for the `limit` best valid facts matching `text`, with no filter.
    #[must_use]
    pub fn new(text: &'a str, limit: usize) -> Self {
        TermQuery {
            text,
            tags: None,
            exclude_source_task: None,
            as_of: None,
            filter: None,
            recency: None,
            limit,
        }
    }

    /// Keeps only facts `filter` holds for.
    #[must_use]
    pub fn with_filter(mut self, filter: &'a Filter) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Ranks by scores decayed with `recency`.
    #[must_use]
    pub fn with_recency(mut self, recency: Option<Recency>) -> Self {
        self.recency = recency;
        self
    }

    /// Keeps only facts carrying any of `tags`.
    #[must_use]
    pub fn with_tags(mut self, tags: &'a [Tag]) -> Self {
        self.tags = Some(tags);
        self
    }

    /// Leaves out facts whose source task is `task_id`.
    #[must_use]
    pub fn with_exclude_source_task(mut self, task_id: &'a str) -> Self {
        self.exclude_source_task = Some(task_id);
        self
    }

    /// Searches the facts valid at `as_of` instead of the valid ones.
    #[must_use]
    pub fn with_as_of(mut self, as_of: Timestamp) -> Self {
        self.as_of = Some(as_of);
        self
    }

    /// Returns at most `limit` facts.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

/// A fact and its score.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredFact {
    /// The fact.
    pub fact: SessionFact,
    /// Its score: from a term search greater than zero; from a vector search
    /// ([`FactVectors::nearest`](crate::FactVectors::nearest)) the cosine similarity, in
    /// `-1..=1`.
    pub score: f64,
}

/// The distinct terms of `terms`, in first-appearance order.
pub fn distinct(terms: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::with_capacity(terms.len());
    for term in terms {
        if !out.contains(&term.as_str()) {
            out.push(term);
        }
    }
    out
}

/// The order of results: higher score, then newer `valid_from`, then smaller id.
#[inline]
pub fn rank_order(a: (f64, Timestamp, FactId), b: (f64, Timestamp, FactId)) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2))
}

/// What the index keeps of one indexed fact that scoring does not touch: enough to rank
/// and filter it by tag without looking the fact up, and to unindex it.
#[derive(Debug, Clone)]
pub struct Slot {
    /// The fact's storage number (insertion order in memory, `seq` in SQL).
    pub seq: u64,
    /// When the fact became true: the tie-break of equal scores.
    pub valid_from: Timestamp,
    /// The fact's id.
    pub id: FactId,
    /// Its tags, for a search's tag filter.
    pub tags: Tags,
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

thread_local! {
    /// The score array of [`TermIndex::score`], one per thread that searches: all zeros
    /// between searches, grown to the largest index scored (8 bytes a slot).
    static SCORES: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// The score array while a search sums into it: its summed entries are set back to zero
/// when it is dropped before the search took them (a weighting that panicked).
struct Sums<'a, 'p> {
    scores: &'a mut Vec<f64>,
    postings: &'a [(&'p [(u32, u32)], f64)],
    done: bool,
}

impl Drop for Sums<'_, '_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for (term_postings, _) in self.postings {
            for &(slot, _) in *term_postings {
                if let Some(score) = self.scores.get_mut(slot as usize) {
                    *score = 0.0;
                }
            }
        }
    }
}

/// The length of a dead slot in [`TermIndex::lens`].
const DEAD: u32 = u32::MAX;

/// The inverted index over the valid facts of a store (the SQLite store's search cache).
///
/// Postings are appended as facts become valid; a fact that stops being valid is marked
/// dead and its postings are skipped until the index is rebuilt, which happens when dead
/// postings outnumber live ones. Scoring reads only `terms`, `lens` and a score array, so
/// its memory traffic is a few bytes per posting.
#[derive(Debug, Default)]
pub struct TermIndex {
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
    /// The heap of the keys of `ids` and `words` (never removed), as `heap.rs` counts
    /// it.
    key_heap: usize,
    /// The heap of every term's postings, as `heap.rs` counts it.
    postings_heap: usize,
}

impl TermIndex {
    /// The id of `term`, created on first sight.
    fn term_id(&mut self, term: String) -> u32 {
        if let Some(id) = self.ids.get(&term) {
            return *id;
        }
        let id = u32::try_from(self.terms.len()).unwrap_or(u32::MAX);
        self.key_heap += crate::heap::chunk(term.capacity());
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
    pub fn insert(&mut self, seq: u64, fact: &SessionFact, analyzer: &Analyzer) -> u32 {
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
                        let word = word.to_owned();
                        self.key_heap += crate::heap::chunk(word.capacity());
                        self.words.insert(word, id);
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
                let before = term.postings.capacity();
                term.postings.push((slot, tf));
                let after = term.postings.capacity();
                if after != before {
                    self.postings_heap = (self.postings_heap
                        + crate::heap::vec_bytes::<(u32, u32)>(after))
                    .saturating_sub(crate::heap::vec_bytes::<(u32, u32)>(before));
                }
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
    pub fn remove(&mut self, slot: u32) {
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
    pub fn wants_rebuild(&self) -> bool {
        self.dead_postings > 1024 && self.dead_postings > self.live_postings
    }

    /// Drops dead slots and postings; returns the new slot of every live fact's `seq`.
    pub fn rebuild(&mut self) -> Vec<(u64, u32)> {
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

    /// The heap the index holds, as the heap model ([`crate::backend::chunk`],
    /// [`crate::backend::map_bytes`]) counts it (every allocation by its capacity).
    pub fn heap_bytes(&self) -> usize {
        use crate::heap::{map_bytes, vec_bytes};
        map_bytes::<String, u32>(self.ids.capacity())
            + map_bytes::<String, u32>(self.words.capacity())
            + self.key_heap
            + vec_bytes::<Term>(self.terms.capacity())
            + self.postings_heap
            + vec_bytes::<u32>(self.lens.capacity())
            + vec_bytes::<Slot>(self.slots.capacity())
            + vec_bytes::<(u32, u32)>(self.fact_terms.capacity())
    }

    /// The live fact in `slot`.
    #[inline]
    pub fn entry(&self, slot: u32) -> Option<&Slot> {
        let live = self.lens.get(slot as usize).is_some_and(|len| *len != DEAD);
        self.slots.get(slot as usize).filter(|_| live)
    }

    /// Scores every live fact that contains a term of `text`; returns `(slot, score)`
    /// pairs with a score above zero, in no particular order (each slot once).
    pub fn score(
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
        let mut postings: Vec<(&[(u32, u32)], f64)> = Vec::with_capacity(known.len());
        for id in known {
            let Some(term) = self.terms.get(id as usize) else {
                continue;
            };
            if term.df == 0 {
                continue;
            }
            let weight = weighting.term_weight(term.df as usize, self.docs, query_terms);
            postings.push((&term.postings, weight));
        }
        SCORES.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => self.score_postings(&postings, avg, weighting, &mut scratch),
            // Scoring on this thread already (a weighting that searches): a fresh array.
            Err(_) => self.score_postings(&postings, avg, weighting, &mut Vec::new()),
        })
    }

    /// Sums the weighted `postings` of the query's terms (in query order) into `scores`,
    /// an array of zeros, at least as long as there are slots when it comes back; returns
    /// the live slots with a score above zero, leaving `scores` all zeros again: a query
    /// with fewer postings than there are slots reads and resets only its candidates'
    /// entries, a longer one passes over the array once.
    ///
    /// Only the candidates' entries are read and reset: no allocation and no pass over
    /// every slot, which at 1,000,000 facts cost more than the scoring itself (an 8 MB
    /// array zeroed and scanned per search).
    fn score_postings(
        &self,
        postings: &[(&[(u32, u32)], f64)],
        avg: f64,
        weighting: &dyn TermWeighting,
        scores: &mut Vec<f64>,
    ) -> Vec<(u32, f64)> {
        if scores.len() < self.lens.len() {
            scores.resize(self.lens.len(), 0.0);
        }
        // Resets what was summed even if the weighting panics, so that the array stays
        // zeros for the next search on this thread.
        let mut sums = Sums {
            scores,
            postings,
            done: false,
        };
        for (term_postings, weight) in postings {
            // Dead slots are scored too (their postings stay until a rebuild) and dropped
            // below: cheaper than a branch per posting.
            weighting.accumulate(*weight, avg, term_postings, &self.lens, sums.scores);
        }
        let mut found = Vec::new();
        let mut take = |slot: usize, score: &mut f64| {
            let sum = std::mem::replace(score, 0.0);
            if sum > 0.0 && self.lens.get(slot).is_some_and(|len| *len != DEAD) {
                found.push((u32::try_from(slot).unwrap_or(u32::MAX), sum));
            }
        };
        let read: usize = postings.iter().map(|(p, _)| p.len()).sum();
        // Reading a posting's entry again is a random access, a pass over the array a
        // sequential one, cheaper per entry: the pass wins once the postings outnumber
        // the slots (at 100,000 facts, a 3-word query's median 0.48 ms with the pass and
        // 0.26 ms reading its postings, a 40-word query's 0.86 ms and 1.68 ms).
        if read >= self.lens.len() {
            // Many candidates (a long query, or common words): one pass over the array.
            let scored = sums.scores.iter_mut().take(self.lens.len()).enumerate();
            for (slot, score) in scored.filter(|(_, score)| **score != 0.0) {
                take(slot, score);
            }
        } else {
            for (term_postings, _) in postings {
                for &(slot, _) in *term_postings {
                    // A slot in several terms' postings is taken (and reset) at the first.
                    if let Some(score) = sums.scores.get_mut(slot as usize)
                        && *score != 0.0
                    {
                        take(slot as usize, score);
                    }
                }
            }
        }
        sums.done = true;
        found
    }
}

/// Scores `facts` by a brute-force scan, exactly as the index does: statistics over all of
/// `facts`, terms in query order. Used for `as_of` searches and by tests as the reference.
pub fn scan_scores<'f>(
    analyzer: &Analyzer,
    facts: impl Iterator<Item = &'f SessionFact>,
    text: &str,
    weighting: &dyn TermWeighting,
) -> Vec<(&'f SessionFact, f64)> {
    scan_positions(analyzer, facts, text, weighting)
        .into_iter()
        .map(|(_, fact, score)| (fact, score))
        .collect()
}

/// [`scan_scores`], each scored fact with its position in `facts`: two versions of one id
/// valid at the same instant are two results, each itself.
pub fn scan_positions<'f>(
    analyzer: &Analyzer,
    facts: impl Iterator<Item = &'f SessionFact>,
    text: &str,
    weighting: &dyn TermWeighting,
) -> Vec<(usize, &'f SessionFact, f64)> {
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
        .enumerate()
        .filter_map(|(at, (fact, doc))| {
            let mut score = 0.0;
            let len = u32::try_from(doc.len()).unwrap_or(u32::MAX);
            for (term, weight) in terms.iter().zip(&weights) {
                let tf = doc.iter().filter(|t| t == term).count();
                if let (Some(weight), true) = (weight, tf > 0) {
                    score += weight
                        * weighting.tf_weight(u32::try_from(tf).unwrap_or(u32::MAX), len, avg);
                }
            }
            (score > 0.0).then_some((at, *fact, score))
        })
        .collect()
}

/// The best `k` results seen so far, in the order of results: higher score, then newer
/// `valid_from`, then smaller id.
pub struct TopK {
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
    /// The rank, then the smaller seq: two versions of one id (an `as_of` search can
    /// rank both) come in the order they were stored.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        rank_order((self.0, self.1, self.2), (other.0, other.1, other.2)).then(self.3.cmp(&other.3))
    }
}

impl TopK {
    /// Keeps the best `k` results.
    #[inline]
    pub fn new(k: usize) -> Self {
        TopK {
            k,
            heap: std::collections::BinaryHeap::with_capacity(k.min(1024) + 1),
        }
    }

    /// Whether a result with this score could be kept (ties need the full rank).
    #[inline]
    pub fn may_admit(&self, score: f64) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|worst| score >= worst.0)
    }

    /// Whether a result with this rank would be kept.
    #[inline]
    pub fn admits(&self, score: f64, valid_from: Timestamp, id: FactId) -> bool {
        self.heap.len() < self.k
            || self.heap.peek().is_some_and(|worst| {
                rank_order((score, valid_from, id), (worst.0, worst.1, worst.2)).is_lt()
            })
    }

    /// Offers a result: kept when it ranks among the best `k` so far.
    #[inline]
    pub fn push(&mut self, score: f64, valid_from: Timestamp, id: FactId, seq: u64) {
        if self.admits(score, valid_from, id) {
            self.heap.push(Ranked(score, valid_from, id, seq));
            if self.heap.len() > self.k {
                self.heap.pop();
            }
        }
    }

    /// Whether it holds `k` results: a result ranked below all of them is not kept.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.heap.len() >= self.k
    }

    /// `(score, seq)` pairs, best first.
    pub fn into_sorted(self) -> Vec<(f64, u64)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| (r.0, r.3))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::string_slice)]

    use super::*;

    /// The char-by-char definition `words` had before it scanned bytes.
    fn words_by_chars(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.char_indices().find(|(_, c)| c.is_alphanumeric()) {
            let from_start = &rest[start.0..];
            let len = from_start
                .char_indices()
                .find(|(_, c)| !c.is_alphanumeric())
                .map_or(from_start.len(), |(i, _)| i);
            let mut end = start.0 + len;
            if rest[start.0..end].bytes().all(|b| b.is_ascii_alphabetic()) {
                let digits = rest[end..]
                    .strip_prefix(':')
                    .map_or(0, |d| d.bytes().take_while(u8::is_ascii_digit).count());
                if digits > 0 {
                    end += 1 + digits;
                }
            }
            out.push(&rest[start.0..end]);
            rest = &rest[end..];
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn words_scan_bytes_as_the_definition_scans_chars(
            text in "([a-zA-Z0-9:_ ./-]|é|ß|日|\\u{2160}|\\u{00A0}|\\u{1F600}){0,40}"
        ) {
            let mut scanned = Vec::new();
            scan_words(&text, |word, plain| scanned.push((word, plain)));
            let plain = |w: &str| w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':');
            let expected: Vec<(&str, bool)> =
                words_by_chars(&text).into_iter().map(|w| (w, plain(w))).collect();
            proptest::prop_assert_eq!(scanned, expected);
        }
    }

    #[test]
    fn stopwords_are_sorted_and_in_their_set() {
        assert!(STOPWORDS.windows(2).all(|pair| pair[0] < pair[1]));
        for word in STOPWORDS {
            assert!(is_stopword(word));
            assert_eq!(
                u128::from(pack_small(word.as_bytes())),
                pack_word(word.as_bytes()).unwrap()
            );
        }
        for word in [
            "", "ab", "src1", "there_", "yamlx", "whose", "z", "thei", "tha",
        ] {
            assert_eq!(is_stopword(word), STOPWORDS.contains(&word), "{word}");
        }
    }

    proptest::proptest! {
        /// Packing is the bytes themselves, zero-padded: injective on NUL-free words.
        #[test]
        fn pack_word_is_the_padded_bytes(word in "[a-z0-9:é]{0,20}") {
            let bytes = word.as_bytes();
            let expected = (bytes.len() <= 16).then(|| {
                let mut padded = [0u8; 16];
                padded[..bytes.len()].copy_from_slice(bytes);
                u128::from_le_bytes(padded)
            });
            proptest::prop_assert_eq!(pack_word(bytes), expected);
        }
    }

    /// A weighting with a term weight by document frequency and a tf part by length, so
    /// that a score left over from another search would show.
    #[derive(Debug)]
    struct Weighted {
        /// Panic in `accumulate` after summing (the scratch array's reset is tested).
        panic: bool,
    }

    impl TermWeighting for Weighted {
        fn term_weight(&self, df: usize, docs: usize, _: usize) -> f64 {
            (1.0 + docs as f64 / (df as f64 + 0.5)).ln()
        }

        fn tf_weight(&self, tf: u32, doc_len: u32, avg: f64) -> f64 {
            f64::from(tf) / (1.0 + f64::from(doc_len) / avg.max(1.0))
        }

        fn accumulate(
            &self,
            weight: f64,
            avg: f64,
            postings: &[(u32, u32)],
            lens: &[u32],
            scores: &mut [f64],
        ) {
            for &(slot, tf) in postings {
                if let (Some(&len), Some(score)) =
                    (lens.get(slot as usize), scores.get_mut(slot as usize))
                {
                    *score += weight * self.tf_weight(tf, len, avg);
                }
            }
            assert!(!self.panic, "a weighting that fails mid-search");
        }
    }

    const VOCABULARY: &[&str] = &["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa"];

    fn fact_of(n: usize, words: &[usize]) -> SessionFact {
        let object: Vec<&str> = words
            .iter()
            .map(|w| VOCABULARY[w % VOCABULARY.len()])
            .collect();
        SessionFact::builder(format!("subject{n}"), "says", object.join(" "))
            .tag(Tag::Decision)
            .source("1", fact_model::SourceRole::Implementer)
            .valid_from(Timestamp::UNIX_EPOCH)
            .build()
            .unwrap()
    }

    /// An index over `facts` with the slots in `dead` removed, and its live facts by slot.
    fn index_of(facts: &[SessionFact], dead: &[usize]) -> (TermIndex, HashMap<u32, SessionFact>) {
        let analyzer = Analyzer::default();
        let mut index = TermIndex::default();
        let mut live = HashMap::new();
        for (n, fact) in facts.iter().enumerate() {
            let slot = index.insert(n as u64, fact, &analyzer);
            live.insert(slot, fact.clone());
        }
        for slot in dead {
            let slot = (*slot % facts.len().max(1)) as u32;
            if live.remove(&slot).is_some() {
                index.remove(slot);
            }
        }
        (index, live)
    }

    /// The index's scores by fact id, checked against a scan of the live facts.
    fn check_scores(index: &TermIndex, live: &HashMap<u32, SessionFact>, query: &str) {
        let analyzer = Analyzer::default();
        let weighting = Weighted { panic: false };
        let mut got: Vec<(FactId, u64)> = index
            .score(query, &analyzer, &weighting)
            .into_iter()
            .map(|(slot, score)| (live[&slot].id(), score.to_bits()))
            .collect();
        got.sort_unstable();
        let mut expected: Vec<(FactId, u64)> =
            scan_scores(&analyzer, live.values(), query, &weighting)
                .into_iter()
                .filter(|(_, score)| *score > 0.0)
                .map(|(fact, score)| (fact.id(), score.to_bits()))
                .collect();
        expected.sort_unstable();
        assert_eq!(got, expected, "{query:?}");
    }

    proptest::proptest! {
        /// Searches of indexes of any size, one after another on one thread (sharing the
        /// thread's score array, short queries reading only their candidates and long
        /// ones every slot), each score what a scan of the live facts gives, bit for bit.
        #[test]
        fn index_scores_are_the_scan_across_searches_of_any_index(
            facts in proptest::collection::vec(proptest::collection::vec(0usize..7, 1..6), 0..40),
            more in proptest::collection::vec(proptest::collection::vec(0usize..7, 1..6), 0..8),
            dead in proptest::collection::vec(0usize..40, 0..10),
            queries in proptest::collection::vec(proptest::collection::vec(0usize..9, 0..9), 1..6),
        ) {
            let big: Vec<SessionFact> =
                facts.iter().enumerate().map(|(n, words)| fact_of(n, words)).collect();
            let small: Vec<SessionFact> =
                more.iter().enumerate().map(|(n, words)| fact_of(n + 100, words)).collect();
            let (big, big_live) = index_of(&big, &dead);
            let (small, small_live) = index_of(&small, &[]);
            for words in &queries {
                // Indexes 7 and 8 are words no fact holds.
                let query: Vec<&str> = words
                    .iter()
                    .map(|w| VOCABULARY.get(*w).copied().unwrap_or("nowhere"))
                    .collect();
                let query = query.join(" ");
                check_scores(&big, &big_live, &query);
                check_scores(&small, &small_live, &query);
            }
        }
    }

    #[test]
    fn a_weighting_that_panics_mid_search_leaves_no_score_behind() {
        let facts: Vec<SessionFact> = (0..30).map(|n| fact_of(n, &[n, n / 2, n / 3])).collect();
        let (index, live) = index_of(&facts, &[3, 9]);
        let analyzer = Analyzer::default();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            index.score("alpha beta", &analyzer, &Weighted { panic: true })
        }));
        assert!(panicked.is_err());
        check_scores(&index, &live, "alpha beta");
        check_scores(&index, &live, "gamma");
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

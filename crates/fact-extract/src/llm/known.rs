//! [`KnownMemory`]: the current facts related to a conversation, which the extraction
//! prompt lists with short ids so the model can name the ones a conversation ends.

use std::collections::HashMap;

use fact_model::{FactId, SessionFact};

/// Hex digits of the shortest short id: 8, so ids stay readable and rarely collide with
/// anything a model might invent.
pub const MIN_SHORT_ID_CHARS: usize = 8;

/// Hex digits of a whole [`FactId`].
const FULL_ID_CHARS: usize = 16;

/// What long-term memory already holds about a conversation's subjects, given to
/// [`ConversationExtractor::extract_conversation`](crate::ConversationExtractor::extract_conversation).
///
/// The caller gathers it from the store, within a budget (the composer takes up to 30
/// facts or 1,500 tokens). The prompt lists each fact on one line with its
/// [short id](Self::short_ids), then the predicates per subject, so the model reuses
/// them; a reply may name only these facts in `supersedes` and `facts_to_remove`. The
/// default knows nothing, and the model is told so.
///
/// ```
/// use fact_extract::KnownMemory;
/// use fact_model::{SessionFact, SourceRole, Tag, Timestamp};
///
/// let paris = SessionFact::builder("user", "lives_in", "Paris")
///     .tag(Tag::Context)
///     .source("ep_1", SourceRole::Extractor)
///     .valid_from("2026-01-10T00:00:00Z".parse()?)
///     .build()?;
/// let known = KnownMemory::new(
///     vec![paris.clone()],
///     vec![("user".to_owned(), vec!["lives_in".to_owned(), "prefers_editor".to_owned()])],
/// );
/// let short = &known.short_ids()[0];
/// assert_eq!(short.len(), 8);
/// assert!(paris.id().to_string().starts_with(short.as_str()));
/// assert_eq!(known.resolve(short), Some(paris.id()));
/// assert_eq!(known.resolve(&paris.id().to_string()), Some(paris.id()));
/// assert_eq!(known.resolve("0000000000000000"), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnownMemory {
    /// The current facts related to the conversation, in the order the prompt lists them.
    /// A fact given twice (the same [`FactId`]) is listed once.
    pub facts: Vec<SessionFact>,
    /// The relations already in use, per subject: `("user", ["lives_in",
    /// "prefers_editor"])`, listed as given (blank names skipped).
    pub predicates: Vec<(String, Vec<String>)>,
}

impl KnownMemory {
    /// Known memory of `facts` and `predicates` (subject, relations in use).
    #[must_use]
    pub fn new(facts: Vec<SessionFact>, predicates: Vec<(String, Vec<String>)>) -> Self {
        KnownMemory { facts, predicates }
    }

    /// Whether it holds no fact and no predicate.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty() && self.predicates.is_empty()
    }

    /// The short id of each fact, in the order of [`facts`](Self::facts): the shortest
    /// prefix of its [`FactId`]'s hex, at least [`MIN_SHORT_ID_CHARS`] digits, that no
    /// other listed fact's id starts with (the whole 16 digits at most). Facts with the
    /// same id share it.
    #[must_use]
    pub fn short_ids(&self) -> Vec<String> {
        KnownIds::new(&self.facts).short_ids
    }

    /// The id of the listed fact that `id` names, as a reply may write it: its short id
    /// or any longer prefix of its hex id (all 16 digits included), in any case, with
    /// surrounding whitespace or brackets (`[a1b2c3d4]`). `None` for anything else.
    #[must_use]
    pub fn resolve(&self, id: &str) -> Option<FactId> {
        KnownIds::new(&self.facts).resolve(id)
    }
}

/// The short ids of a list of facts, and the way back from what a reply writes.
#[derive(Debug, Default)]
pub(crate) struct KnownIds {
    /// Per fact, in order, its short id.
    pub(crate) short_ids: Vec<String>,
    /// Distinct ids by their short id: short id → (full hex, id).
    by_short: HashMap<String, (String, FactId)>,
}

impl KnownIds {
    pub(crate) fn new(facts: &[SessionFact]) -> Self {
        Self::from_ids(facts.iter().map(SessionFact::id))
    }

    pub(crate) fn from_ids(ids: impl IntoIterator<Item = FactId>) -> Self {
        let all: Vec<(String, FactId)> = ids.into_iter().map(|id| (id.to_string(), id)).collect();
        let mut hexes: Vec<&str> = all.iter().map(|(hex, _)| hex.as_str()).collect();
        hexes.sort_unstable();
        hexes.dedup();
        // Sorted, the longest prefix an id shares with any other is shared with a neighbour.
        let mut lengths: HashMap<&str, usize> = HashMap::with_capacity(hexes.len());
        for (index, hex) in hexes.iter().enumerate() {
            let before = index
                .checked_sub(1)
                .and_then(|i| hexes.get(i))
                .map_or(0, |other| common_prefix(hex, other));
            let after = hexes
                .get(index + 1)
                .map_or(0, |other| common_prefix(hex, other));
            let len = (before.max(after) + 1).clamp(MIN_SHORT_ID_CHARS, FULL_ID_CHARS);
            lengths.insert(hex, len);
        }
        let mut short_ids = Vec::with_capacity(all.len());
        let mut by_short = HashMap::with_capacity(lengths.len());
        for (hex, id) in &all {
            let len = lengths.get(hex.as_str()).copied().unwrap_or(FULL_ID_CHARS);
            let short = hex.get(..len).unwrap_or(hex).to_owned();
            by_short.insert(short.clone(), (hex.clone(), *id));
            short_ids.push(short);
        }
        KnownIds {
            short_ids,
            by_short,
        }
    }

    /// See [`KnownMemory::resolve`].
    pub(crate) fn resolve(&self, id: &str) -> Option<FactId> {
        let id = id
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim()
            .to_ascii_lowercase();
        if !(MIN_SHORT_ID_CHARS..=FULL_ID_CHARS).contains(&id.len())
            || !id.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return None;
        }
        // A prefix at least as long as a fact's short id names that fact alone: look the
        // prefix of each short-id length up.
        (MIN_SHORT_ID_CHARS..=id.len()).find_map(|len| {
            let (hex, fact) = self.by_short.get(id.get(..len)?)?;
            hex.starts_with(&id).then_some(*fact)
        })
    }
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &str, b: &str) -> usize {
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(hexes: &[&str]) -> Vec<FactId> {
        hexes.iter().map(|hex| hex.parse().unwrap()).collect()
    }

    #[test]
    fn short_ids_grow_until_unique() {
        let known = KnownIds::from_ids(ids(&[
            "a1b2c3d4e5f60718",
            "a1b2c3d4e5000000",
            "a1b2c3d4ffffffff",
            "0000000000000001",
            "a1b2c3d4e5f60718",
            "0000000000000000",
        ]));
        assert_eq!(
            known.short_ids,
            [
                "a1b2c3d4e5f",
                "a1b2c3d4e50",
                "a1b2c3d4f",
                "0000000000000001",
                "a1b2c3d4e5f",
                "0000000000000000",
            ]
        );
        let id = |hex: &str| hex.parse::<FactId>().ok();
        assert_eq!(known.resolve("a1b2c3d4e5f"), id("a1b2c3d4e5f60718"));
        assert_eq!(known.resolve(" [A1B2C3D4E5F6] "), id("a1b2c3d4e5f60718"));
        assert_eq!(known.resolve("a1b2c3d4e5f60718"), id("a1b2c3d4e5f60718"));
        assert_eq!(known.resolve("a1b2c3d4f"), id("a1b2c3d4ffffffff"));
        // Too short to name one fact, or not theirs.
        assert_eq!(known.resolve("a1b2c3d4"), None);
        assert_eq!(known.resolve("a1b2c3d4e5"), None);
        assert_eq!(known.resolve("a1b2c3d4e5f7"), None);
        assert_eq!(known.resolve("a1b2c3d4e5f60718a"), None);
        assert_eq!(known.resolve("zzzzzzzz"), None);
        assert_eq!(known.resolve("é"), None);
        assert_eq!(known.resolve(""), None);
        let lone = KnownIds::from_ids(ids(&["a1b2c3d4e5f60718"]));
        assert_eq!(lone.short_ids, ["a1b2c3d4"]);
        assert_eq!(lone.resolve("a1b2c3d4"), id("a1b2c3d4e5f60718"));
    }

    #[test]
    fn common_prefixes() {
        assert_eq!(common_prefix("abc", "abd"), 2);
        assert_eq!(common_prefix("abc", "abc"), 3);
        assert_eq!(common_prefix("", "abc"), 0);
    }
}

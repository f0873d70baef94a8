//! How every backend scores episodes' messages: the analyzed terms a message is indexed
//! by, the scope's statistics, BM25-style scoring of candidates, the score neighbours
//! lend each other, and the final order. A backend only finds the candidates (the
//! messages holding a query term, from its own index) and reads the rows of the winners;
//! everything that decides a rank is here, once.

use std::collections::{BTreeMap, HashMap};

use fact_model::{Message, Timestamp};

use crate::{Analyzer, Episode, MessageQuery, TermWeighting};

/// The most distinct query terms a message search scores; the rest of a long query is
/// ignored (a question has a few dozen at most).
pub const MAX_MESSAGE_QUERY_TERMS: usize = 64;

/// A message's place: its episode's storage number and its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageKey {
    /// The episode's number: insertion order in memory, the row number in SQL.
    pub episode: u64,
    /// The message's turn in its episode.
    pub turn: u32,
}

impl MessageKey {
    /// The place of turn `turn` of episode `episode` (turns past `u32::MAX` saturate).
    pub fn new(episode: u64, turn: usize) -> Self {
        MessageKey {
            episode,
            turn: u32::try_from(turn).unwrap_or(u32::MAX),
        }
    }

    /// The turn as an index into the episode's messages.
    pub fn turn_index(self) -> usize {
        self.turn as usize
    }
}

/// A scope's message statistics: how many messages, and their total length in terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageStats {
    /// How many messages are indexed.
    pub messages: u64,
    /// Their total length in terms.
    pub total_len: u64,
}

impl MessageStats {
    /// Counts a message of these terms in.
    pub fn add(&mut self, terms: &[String]) {
        self.messages += 1;
        self.total_len += terms.len() as u64;
    }

    /// Counts a message of these terms out.
    pub fn remove(&mut self, terms: &[String]) {
        self.messages = self.messages.saturating_sub(1);
        self.total_len = self.total_len.saturating_sub(terms.len() as u64);
    }

    fn average_len(self) -> f64 {
        if self.messages == 0 {
            0.0
        } else {
            self.total_len as f64 / self.messages as f64
        }
    }
}

/// The terms a message is indexed by: its content, analyzed.
pub fn message_terms(analyzer: &Analyzer, message: &Message) -> Vec<String> {
    analyzer.analyze(&message.content)
}

/// The distinct terms of `terms` with their counts, in term order.
pub fn term_counts(terms: &[String]) -> BTreeMap<&str, u32> {
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    for term in terms {
        *counts.entry(term.as_str()).or_default() += 1;
    }
    counts
}

/// The distinct terms of a query, in first-appearance order, at most
/// [`MAX_MESSAGE_QUERY_TERMS`].
pub fn query_terms(analyzer: &Analyzer, text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for term in analyzer.analyze(text) {
        if out.len() == MAX_MESSAGE_QUERY_TERMS {
            break;
        }
        if !out.contains(&term) {
            out.push(term);
        }
    }
    out
}

/// A message holding at least one query term.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Where the message is.
    pub key: MessageKey,
    /// When it was said (`as_of` filters on it).
    pub at: Option<Timestamp>,
    /// Its length in terms.
    pub doc_len: u32,
    /// How often it holds each query term, by the term's position in the query.
    pub tfs: Vec<u32>,
}

impl Candidate {
    /// A candidate from its stored term text (the analyzed terms joined by spaces), for
    /// the query's `terms`.
    pub fn from_terms(
        key: MessageKey,
        at: Option<Timestamp>,
        stored: &str,
        terms: &[String],
    ) -> Candidate {
        let mut tfs = vec![0u32; terms.len()];
        let mut doc_len = 0u32;
        for token in stored.split_ascii_whitespace() {
            doc_len = doc_len.saturating_add(1);
            if let Some(position) = terms.iter().position(|term| term == token)
                && let Some(tf) = tfs.get_mut(position)
            {
                *tf += 1;
            }
        }
        Candidate {
            key,
            at,
            doc_len,
            tfs,
        }
    }
}

/// Whether `message` was said by `as_of` (a message without a time always is).
pub fn said_by(message: &Message, as_of: Option<Timestamp>) -> bool {
    match (as_of, message.timestamp) {
        (Some(as_of), Some(at)) => at <= as_of,
        _ => true,
    }
}

/// Scores the candidates, spreads scores to neighbours, and orders every message that
/// scores above zero: `(key, score)`, best first (score, then newer episode, then turn).
/// `df` holds the document frequency of each query term, in query order.
pub fn rank(
    query: &MessageQuery<'_>,
    weighting: &dyn TermWeighting,
    df: &[usize],
    stats: MessageStats,
    candidates: Vec<Candidate>,
) -> Vec<(MessageKey, f64)> {
    let docs = usize::try_from(stats.messages).unwrap_or(usize::MAX);
    let average = stats.average_len();
    let query_terms = df.len().max(1);
    let weights: Vec<f64> = df
        .iter()
        .map(|df| weighting.term_weight(*df, docs, query_terms))
        .collect();
    let mut own: HashMap<MessageKey, f64> = HashMap::with_capacity(candidates.len());
    for candidate in candidates {
        if let (Some(as_of), Some(at)) = (query.as_of, candidate.at)
            && at > as_of
        {
            continue;
        }
        let mut score = 0.0;
        for (tf, weight) in candidate.tfs.iter().zip(&weights) {
            if *tf > 0 {
                score += weight * weighting.tf_weight(*tf, candidate.doc_len, average);
            }
        }
        if score > 0.0 {
            own.insert(candidate.key, score);
        }
    }
    let mut total: HashMap<MessageKey, f64> = own.clone();
    if query.context > 0 && query.context_weight > 0.0 {
        let reach = u32::try_from(query.context).unwrap_or(u32::MAX);
        for (key, score) in &own {
            let lent = query.context_weight * score;
            let low = key.turn.saturating_sub(reach);
            let high = key.turn.saturating_add(reach);
            for turn in low..=high {
                if turn != key.turn {
                    let neighbour = MessageKey {
                        episode: key.episode,
                        turn,
                    };
                    *total.entry(neighbour).or_default() += lent;
                }
            }
        }
    }
    let mut ranked: Vec<(MessageKey, f64)> = total
        .into_iter()
        .filter(|(_, score)| *score > 0.0)
        .collect();
    ranked.sort_by(|(a, x), (b, y)| {
        y.total_cmp(x)
            .then(b.episode.cmp(&a.episode))
            .then(a.turn.cmp(&b.turn))
    });
    ranked
}

/// The episodes of a title and summary search, best first, at most `limit` (and at most
/// [`MAX_SEARCH_LIMIT`](crate::MAX_SEARCH_LIMIT)): `(score, number, episode)` with the
/// score the number of distinct query terms the episode holds and `number` its storage
/// order; ranked by score, then newer, then stored earlier.
pub fn rank_episodes(mut scored: Vec<(usize, u64, Episode)>, limit: usize) -> Vec<Episode> {
    scored.retain(|(score, _, _)| *score > 0);
    scored.sort_by(|(a, n, x), (b, m, y)| {
        b.cmp(a)
            .then(y.created_at.cmp(&x.created_at))
            .then(n.cmp(m))
    });
    scored
        .into_iter()
        .take(limit.min(crate::MAX_SEARCH_LIMIT))
        .map(|(_, _, episode)| episode)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Count;

    impl TermWeighting for Count {
        fn term_weight(&self, _: usize, _: usize, _: usize) -> f64 {
            1.0
        }
        fn tf_weight(&self, tf: u32, _: u32, _: f64) -> f64 {
            f64::from(tf)
        }
    }

    fn candidate(episode: u64, turn: usize, tfs: Vec<u32>) -> Candidate {
        Candidate {
            key: MessageKey::new(episode, turn),
            at: None,
            doc_len: 5,
            tfs,
        }
    }

    #[test]
    fn neighbours_lend_their_score_within_the_window_and_the_episode() {
        let stats = MessageStats {
            messages: 10,
            total_len: 50,
        };
        let query = MessageQuery::new("x", 10).with_context(1, 0.5);
        let ranked = rank(
            &query,
            &Count,
            &[1],
            stats,
            vec![candidate(0, 3, vec![2]), candidate(1, 0, vec![1])],
        );
        let scores: Vec<((u64, u32), f64)> = ranked
            .into_iter()
            .map(|(k, s)| ((k.episode, k.turn), s))
            .collect();
        assert_eq!(
            scores,
            [
                ((0, 3), 2.0),
                ((1, 0), 1.0),
                ((0, 2), 1.0),
                ((0, 4), 1.0),
                ((1, 1), 0.5)
            ]
        );
    }

    #[test]
    fn without_context_only_candidates_score() {
        let stats = MessageStats {
            messages: 2,
            total_len: 10,
        };
        let query = MessageQuery::new("x", 10).with_context(0, 0.5);
        let ranked = rank(&query, &Count, &[1], stats, vec![candidate(0, 1, vec![1])]);
        assert_eq!(ranked.len(), 1);
    }

    #[test]
    fn candidates_count_their_terms_from_the_stored_text() {
        let terms = vec!["berlin".to_owned(), "move".to_owned()];
        let c = Candidate::from_terms(MessageKey::new(1, 2), None, "move to berlin move", &terms);
        assert_eq!((c.doc_len, c.tfs), (4, vec![1, 2]));
    }
}

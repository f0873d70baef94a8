//! The episodes' messages on PostgreSQL: their term documents over this scope's
//! message-term ids, the terms' document frequencies and the scope's message statistics,
//! kept in the write transaction that stores or deletes an episode (and by the migration
//! that indexes the messages of older databases).

use std::collections::HashMap;

use fact_model::{Message, Timestamp};
use fact_store::backend::messages;
use fact_store::{Analyzer, Episode};
use fact_store_sql::codec::parse_term;

use crate::error::{DbError, DbResult};
use crate::statements::{Db, text_key};

/// The distinct terms of an episode's title and summary, sorted: what `search_episodes`
/// matches.
pub(crate) fn episode_terms(analyzer: &Analyzer, episode: &Episode) -> Vec<String> {
    let text = format!("{} {}", episode.title, episode.summary);
    let mut terms = analyzer.analyze(&text);
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// The ids of this scope's message `terms` (distinct), created with `df` 0 when new, in
/// the order of `terms`.
fn term_ids(db: &mut Db<'_, '_>, scope: i64, terms: &[&str]) -> DbResult<Vec<i64>> {
    let keys: Vec<Vec<u8>> = terms.iter().map(|term| text_key(term)).collect();
    let mut ids: HashMap<Vec<u8>, i64> = HashMap::with_capacity(keys.len());
    for row in db.query(
        "SELECT term_key, id FROM message_terms WHERE scope = $1 AND term_key = ANY($2)",
        &[&scope, &keys],
    )? {
        ids.insert(row.try_get(0)?, row.try_get(1)?);
    }
    let (missing, missing_keys): (Vec<&str>, Vec<&Vec<u8>>) = terms
        .iter()
        .zip(&keys)
        .filter(|(_, key)| !ids.contains_key(*key))
        .map(|(term, key)| (*term, key))
        .unzip();
    if !missing.is_empty() {
        for row in db.query(
            "INSERT INTO message_terms (scope, term, term_key) \
             SELECT $1, t.term, t.term_key FROM unnest($2::TEXT[], $3::BYTEA[]) AS t(term, term_key) \
             RETURNING term_key, id",
            &[&scope, &missing, &missing_keys],
        )? {
            ids.insert(row.try_get(0)?, row.try_get(1)?);
        }
    }
    keys.iter()
        .map(|key| {
            ids.get(key)
                .copied()
                .ok_or_else(|| DbError::Corrupt("a message term has no id".into()))
        })
        .collect()
}

/// Adds each delta to its term's document frequency, and `(messages, length)` to the
/// scope's message statistics.
fn add_message_stats(
    db: &mut Db<'_, '_>,
    scope: i64,
    df: HashMap<i64, i64>,
    messages: i64,
    length: i64,
) -> DbResult<()> {
    let mut changes: Vec<(i64, i64)> = df.into_iter().filter(|(_, d)| *d != 0).collect();
    if !changes.is_empty() {
        changes.sort_unstable();
        let (ids, deltas): (Vec<i64>, Vec<i64>) = changes.into_iter().unzip();
        db.execute(
            "UPDATE message_terms SET df = message_terms.df + c.delta \
             FROM unnest($2::BIGINT[], $3::BIGINT[]) AS c(id, delta) \
             WHERE message_terms.scope = $1 AND message_terms.id = c.id",
            &[&scope, &ids, &deltas],
        )?;
    }
    if messages != 0 || length != 0 {
        db.execute(
            "UPDATE scopes SET message_count = message_count + $2, \
             message_len = message_len + $3 WHERE id = $1",
            &[&scope, &messages, &length],
        )?;
    }
    Ok(())
}

/// Stores and indexes `messages` as the turns of episode `episode` (its row number), which
/// has none yet: their term documents, the terms' document frequencies and the scope's
/// statistics, as `InMemoryEpisodeStore` indexes them.
pub(crate) fn index_messages(
    db: &mut Db<'_, '_>,
    scope: i64,
    episode: i64,
    messages: &[Message],
    analyzer: &Analyzer,
) -> DbResult<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let analyzed: Vec<Vec<String>> = messages
        .iter()
        .map(|message| messages::message_terms(analyzer, message))
        .collect();
    let mut distinct: Vec<&str> = Vec::new();
    let mut position: HashMap<&str, usize> = HashMap::new();
    for term in analyzed.iter().flatten() {
        position.entry(term.as_str()).or_insert_with(|| {
            distinct.push(term.as_str());
            distinct.len() - 1
        });
    }
    let ids = if distinct.is_empty() {
        Vec::new()
    } else {
        term_ids(db, scope, &distinct)?
    };
    let mut df: HashMap<i64, i64> = HashMap::new();
    let mut length = 0i64;
    let count = messages.len();
    let (mut turns, mut roles, mut contents) = (
        Vec::with_capacity(count),
        Vec::with_capacity(count),
        Vec::with_capacity(count),
    );
    let (mut ats, mut lens, mut documents) = (
        Vec::with_capacity(count),
        Vec::with_capacity(count),
        Vec::with_capacity(count),
    );
    for (turn, (message, terms)) in messages.iter().zip(&analyzed).enumerate() {
        let mut document = String::with_capacity(terms.len() * 6);
        let mut seen: Vec<i64> = Vec::new();
        for term in terms {
            let id = position
                .get(term.as_str())
                .and_then(|at| ids.get(*at))
                .copied()
                .ok_or_else(|| DbError::Corrupt(format!("no id for message term {term:?}")))?;
            if !document.is_empty() {
                document.push(' ');
            }
            document.push('t');
            document.push_str(&id.to_string());
            if !seen.contains(&id) {
                seen.push(id);
                *df.entry(id).or_default() += 1;
            }
        }
        let len = i64::try_from(terms.len()).unwrap_or(i64::MAX);
        length = length.saturating_add(len);
        turns.push(
            i32::try_from(turn)
                .map_err(|_| DbError::Corrupt(format!("an episode of {count} messages")))?,
        );
        roles.push(message.role.as_str());
        contents.push(message.content.as_str());
        ats.push(message.timestamp.map(Timestamp::unix_micros));
        lens.push(len);
        documents.push(document);
    }
    db.execute(
        "INSERT INTO messages (scope, episode, turn, role, content, at, doc_len, terms) \
         SELECT $1, $2, m.turn, m.role, m.content, m.at, m.doc_len, m.terms \
         FROM unnest($3::INTEGER[], $4::TEXT[], $5::TEXT[], $6::BIGINT[], $7::BIGINT[], \
         $8::TEXT[]) AS m(turn, role, content, at, doc_len, terms)",
        &[
            &scope, &episode, &turns, &roles, &contents, &ats, &lens, &documents,
        ],
    )?;
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    add_message_stats(db, scope, df, count, length)
}

/// Deletes the messages of episode `episode`, taking them out of the document
/// frequencies and the scope's statistics.
pub(crate) fn unindex_messages(db: &mut Db<'_, '_>, scope: i64, episode: i64) -> DbResult<()> {
    let rows = db.query(
        "DELETE FROM messages WHERE scope = $1 AND episode = $2 RETURNING doc_len, terms",
        &[&scope, &episode],
    )?;
    let mut df: HashMap<i64, i64> = HashMap::new();
    let mut length = 0i64;
    for row in &rows {
        let (len, document): (i64, String) = (row.try_get(0)?, row.try_get(1)?);
        length = length.saturating_add(len);
        let mut seen: Vec<i64> = Vec::new();
        for token in document.split_ascii_whitespace() {
            let id = parse_term(token)?;
            if !seen.contains(&id) {
                seen.push(id);
                *df.entry(id).or_default() -= 1;
            }
        }
    }
    let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    add_message_stats(db, scope, df, -count, -length)
}

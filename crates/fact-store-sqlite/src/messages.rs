//! The messages of a scope's episodes, indexed for search: each message is a row of
//! `messages` with its term document (the episode analyzer's terms as message-term ids,
//! `t5 t9 t5`), FTS5 over those documents finds the candidates (`message_fts`), and the
//! scope's document frequencies (`message_terms.df`) and statistics
//! (`scopes.message_count`, `scopes.message_len`) are kept as messages come and go.
//!
//! Only finding candidates and reading rows is SQLite's; the ranking is the shared one
//! of [`fact_store::backend::messages`], so a search answers exactly as the in-memory store does.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use fact_model::{Message, MessageRole, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use crate::error::{DbError, DbResult};
use fact_store::backend::messages::{self, Candidate, MessageKey, MessageStats};
use fact_store::{Analyzer, MAX_SEARCH_LIMIT, MessageHit, MessageQuery, TermWeighting};
use fact_store_sql::codec::{parse_term, time_from_sql};

/// The id of the scope's message term `term`, created when new (`ids` remembers the
/// terms of this write).
fn term_id(
    conn: &Connection,
    scope: i64,
    term: &str,
    ids: &mut HashMap<String, i64>,
) -> DbResult<i64> {
    if let Some(id) = ids.get(term) {
        return Ok(*id);
    }
    let existing: Option<i64> = conn
        .prepare_cached("SELECT id FROM message_terms WHERE scope = ?1 AND term = ?2")?
        .query_row(params![scope, term], |row| row.get(0))
        .optional()?;
    let id = match existing {
        Some(id) => id,
        None => {
            conn.prepare_cached("INSERT INTO message_terms (scope, term) VALUES (?1, ?2)")?
                .execute(params![scope, term])?;
            conn.last_insert_rowid()
        }
    };
    ids.insert(term.to_owned(), id);
    Ok(id)
}

/// Adds each `(term id, delta)` to the terms' document frequencies, and `messages` and
/// `len` to the scope's statistics.
fn add_counts(
    conn: &Connection,
    scope: i64,
    df: &BTreeMap<i64, i64>,
    messages: i64,
    len: i64,
) -> DbResult<()> {
    let mut update = conn.prepare_cached(
        "UPDATE message_terms SET df = max(0, df + ?3) WHERE scope = ?1 AND id = ?2",
    )?;
    for (term, delta) in df.iter().filter(|(_, delta)| **delta != 0) {
        update.execute(params![scope, term, delta])?;
    }
    if messages != 0 || len != 0 {
        conn.prepare_cached(
            "UPDATE scopes SET message_count = max(0, message_count + ?2), \
             message_len = max(0, message_len + ?3) WHERE id = ?1",
        )?
        .execute(params![scope, messages, len])?;
    }
    Ok(())
}

/// Stores and indexes `messages` as the turns of episode `episode` (its row number) of
/// `scope`, analyzed with `analyzer`; the episode has no message rows yet.
pub(super) fn index_messages(
    conn: &Connection,
    scope: i64,
    episode: i64,
    messages: &[Message],
    analyzer: &Analyzer,
) -> DbResult<()> {
    let mut ids: HashMap<String, i64> = HashMap::new();
    let mut df: BTreeMap<i64, i64> = BTreeMap::new();
    let mut total_len = 0i64;
    let mut insert = conn.prepare_cached(
        "INSERT INTO messages (scope, episode, turn, role, content, at, doc_len, terms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?;
    let mut fts = conn.prepare_cached("INSERT INTO message_fts (rowid, terms) VALUES (?1, ?2)")?;
    for (turn, message) in messages.iter().enumerate() {
        let terms = messages::message_terms(analyzer, message);
        let mut document = String::with_capacity(terms.len() * 6);
        let mut distinct = BTreeSet::new();
        for term in &terms {
            let id = term_id(conn, scope, term, &mut ids)?;
            if !document.is_empty() {
                document.push(' ');
            }
            document.push('t');
            document.push_str(&id.to_string());
            distinct.insert(id);
        }
        for id in distinct {
            *df.entry(id).or_default() += 1;
        }
        let doc_len = i64::try_from(terms.len()).unwrap_or(i64::MAX);
        total_len = total_len.saturating_add(doc_len);
        insert.execute(params![
            scope,
            episode,
            i64::try_from(turn).unwrap_or(i64::MAX),
            message.role.as_str(),
            message.content,
            message.timestamp.map(Timestamp::unix_micros),
            doc_len,
            document,
        ])?;
        fts.execute(params![conn.last_insert_rowid(), document])?;
    }
    let count = i64::try_from(messages.len()).unwrap_or(i64::MAX);
    add_counts(conn, scope, &df, count, total_len)
}

/// Takes the messages of episode `episode` of `scope` out of the index and deletes them.
pub(super) fn unindex_messages(conn: &Connection, scope: i64, episode: i64) -> DbResult<()> {
    let rows: Vec<(i64, i64, String)> = conn
        .prepare_cached(
            "SELECT id, doc_len, terms FROM messages WHERE scope = ?1 AND episode = ?2",
        )?
        .query_map(params![scope, episode], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    if rows.is_empty() {
        return Ok(());
    }
    let mut df: BTreeMap<i64, i64> = BTreeMap::new();
    let mut total_len = 0i64;
    let mut delete = conn.prepare_cached("DELETE FROM message_fts WHERE rowid = ?1")?;
    for (row, doc_len, document) in &rows {
        delete.execute([row])?;
        let mut distinct = BTreeSet::new();
        for token in document.split_ascii_whitespace() {
            distinct.insert(parse_term(token)?);
        }
        for id in distinct {
            *df.entry(id).or_default() -= 1;
        }
        total_len = total_len.saturating_add(*doc_len);
    }
    conn.prepare_cached("DELETE FROM messages WHERE scope = ?1 AND episode = ?2")?
        .execute(params![scope, episode])?;
    let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
    add_counts(conn, scope, &df, -count, -total_len)
}

/// A message as stored: its role, content and time.
fn read_message(role: &str, content: String, at: Option<i64>) -> DbResult<Message> {
    let role: MessageRole = role
        .parse()
        .map_err(|e| DbError::Corrupt(format!("stored message role: {e}")))?;
    Ok(Message {
        role,
        content,
        timestamp: at.map(time_from_sql).transpose()?,
    })
}

/// The messages of episode `episode` of `scope`, in turn order.
pub(super) fn read_messages(conn: &Connection, scope: i64, episode: i64) -> DbResult<Vec<Message>> {
    let mut stmt = conn.prepare_cached(
        "SELECT role, content, at FROM messages WHERE scope = ?1 AND episode = ?2 ORDER BY turn",
    )?;
    let mut rows = stmt.query(params![scope, episode])?;
    let mut messages = Vec::new();
    while let Some(row) = rows.next()? {
        let role: String = row.get(0)?;
        messages.push(read_message(&role, row.get(1)?, row.get(2)?)?);
    }
    Ok(messages)
}

/// A row number or turn as a key part (never negative as this store writes them).
fn key_part(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// [`search_messages`](fact_store::EpisodeStore::search_messages) over the messages of
/// `scope`, in one read transaction: the statistics, the candidates FTS5 finds and the
/// rows of the ranked messages all come from one snapshot.
pub(super) fn search(
    conn: &mut Connection,
    scope: i64,
    analyzer: &Analyzer,
    query: &MessageQuery<'_>,
    weighting: &dyn TermWeighting,
) -> DbResult<Vec<MessageHit>> {
    let limit = query.limit.min(MAX_SEARCH_LIMIT);
    let terms = messages::query_terms(analyzer, query.text);
    if limit == 0 || terms.is_empty() {
        return Ok(Vec::new());
    }
    let tx = conn.transaction()?;
    let (count, total_len): (i64, i64) = tx
        .prepare_cached("SELECT message_count, message_len FROM scopes WHERE id = ?1")?
        .query_row([scope], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let stats = MessageStats {
        messages: key_part(count),
        total_len: key_part(total_len),
    };
    // Each query term as the token its messages' documents hold (none when the scope has
    // no such term: an empty token, which no document holds), with its frequency.
    let mut tokens: Vec<String> = Vec::with_capacity(terms.len());
    let mut df: Vec<usize> = Vec::with_capacity(terms.len());
    {
        let mut lookup =
            tx.prepare_cached("SELECT id, df FROM message_terms WHERE scope = ?1 AND term = ?2")?;
        for term in &terms {
            let found: Option<(i64, i64)> = lookup
                .query_row(params![scope, term], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()?;
            match found {
                Some((id, frequency)) => {
                    tokens.push(format!("t{id}"));
                    df.push(usize::try_from(frequency).unwrap_or(0));
                }
                None => {
                    tokens.push(String::new());
                    df.push(0);
                }
            }
        }
    }
    let expression = tokens
        .iter()
        .zip(&df)
        .filter(|(_, df)| **df > 0)
        .map(|(token, _)| token.as_str())
        .collect::<Vec<_>>()
        .join(" OR ");
    let mut candidates = Vec::new();
    if !expression.is_empty() {
        let mut stmt = tx.prepare_cached(
            "SELECT m.episode, m.turn, m.at, m.terms FROM message_fts \
             CROSS JOIN messages AS m ON m.id = message_fts.rowid \
             WHERE message_fts MATCH ?1 AND m.scope = ?2",
        )?;
        let mut rows = stmt.query(params![expression, scope])?;
        while let Some(row) = rows.next()? {
            let (episode, turn, at): (i64, i64, Option<i64>) =
                (row.get(0)?, row.get(1)?, row.get(2)?);
            let document: String = row.get(3)?;
            let key = MessageKey::new(
                key_part(episode),
                usize::try_from(turn).unwrap_or(usize::MAX),
            );
            let at = at.map(time_from_sql).transpose()?;
            candidates.push(Candidate::from_terms(key, at, &document, &tokens));
        }
    }
    let ranked = messages::rank(query, weighting, &df, stats, candidates);
    let mut hits = Vec::new();
    {
        let mut read = tx.prepare_cached(
            "SELECT m.role, m.content, m.at, e.id, e.title, e.summary FROM messages AS m \
             JOIN episodes AS e ON e.n = m.episode AND e.scope = ?1 \
             WHERE m.scope = ?1 AND m.episode = ?2 AND m.turn = ?3",
        )?;
        for (key, score) in ranked {
            if hits.len() >= limit {
                break;
            }
            let episode = i64::try_from(key.episode).unwrap_or(i64::MAX);
            let mut rows = read.query(params![scope, episode, i64::from(key.turn)])?;
            let Some(row) = rows.next()? else {
                // A neighbour past either end of its episode.
                continue;
            };
            let role: String = row.get(0)?;
            let message = read_message(&role, row.get(1)?, row.get(2)?)?;
            if !messages::said_by(&message, query.as_of) {
                continue;
            }
            hits.push(MessageHit {
                episode_id: row.get(3)?,
                episode_title: row.get(4)?,
                episode_summary: row.get(5)?,
                turn: key.turn_index(),
                message,
                score,
            });
        }
    }
    tx.commit()?;
    Ok(hits)
}

//! The episodes of a [`PgFactStore`](crate::PgFactStore) ([`EpisodeReads`]): the `episodes` and `messages` tables of its
//! scope.
//!
//! An episode's row holds its title, summary, tags (a JSON array), times and `terms`, the
//! distinct terms of its title and summary (the default analyzer, as
//! [`InMemoryEpisodeStore`](fact_store::InMemoryEpisodeStore) uses) under a GIN index; its
//! conversation is kept once, as rows of `messages` (`long_term.rs` writes them). Writes
//! go through the store's write transaction (the scope's row lock, retried on
//! conflicts); each read is one read-only repeatable-read transaction, so an episode is
//! never read with half of a replacement's messages.
//!
//! Both searches rank in shared code, as every store does: `search_episodes` takes the
//! episodes holding any query term (`terms && $2`) and ranks them with
//! `messages::rank_episodes`; `search_messages` finds the candidate messages with the
//! GIN index over their term documents, scores them with `messages::rank` from the
//! scope's statistics, and reads the rows of the best keys in order.

use std::collections::{HashMap, HashSet};

use fact_model::{Message, MessageRole, Timestamp};
use postgres::{IsolationLevel, Row};

use crate::driver::Postgres;
use crate::error::{DbError, DbResult};
use crate::pool::Connection;
use crate::statements::{Db, text_key};
use fact_store::backend::messages::{self, Candidate, MessageKey, MessageStats};
use fact_store::{Episode, MAX_SEARCH_LIMIT, MessageHit, MessageQuery, StoreResult, TermWeighting};
use fact_store_sql::EpisodeReads;
use fact_store_sql::codec::{metadata_from_json, time_from_sql};

/// The episode columns every episode query selects, in the order [`read_episode`] reads.
const EPISODE_COLUMNS: &str = "n, id, title, summary, tags, created_at, extracted_at, metadata";
/// How many columns [`EPISODE_COLUMNS`] names: where a query's next column is.
const EPISODE_COLUMN_COUNT: usize = 8;

/// The fewest ranked messages read in one round of a message search.
const READ_ROUND: usize = 32;

/// An episode number as a message key holds it.
fn episode_key(n: i64) -> DbResult<u64> {
    u64::try_from(n).map_err(|_| DbError::Corrupt(format!("episode number {n}")))
}

/// An episode (without its messages) and its number, from [`EPISODE_COLUMNS`] at `at`.
fn read_episode(row: &Row, at: usize) -> DbResult<(i64, Episode)> {
    let tags: String = row.try_get(at + 4)?;
    let tags: Vec<String> = serde_json::from_str(&tags)
        .map_err(|e| DbError::Corrupt(format!("stored episode tags: {e}")))?;
    let extracted_at: Option<i64> = row.try_get(at + 6)?;
    let episode = Episode {
        id: row.try_get(at + 1)?,
        title: row.try_get(at + 2)?,
        summary: row.try_get(at + 3)?,
        messages: Vec::new(),
        tags,
        created_at: time_from_sql(row.try_get(at + 5)?)?,
        extracted_at: extracted_at.map(time_from_sql).transpose()?,
        metadata: metadata_from_json(row.try_get(at + 7)?)?,
    };
    Ok((row.try_get(at)?, episode))
}

/// A message from the columns `role, content, at` at `at`.
fn read_message(row: &Row, at: usize) -> DbResult<Message> {
    let role: String = row.try_get(at)?;
    let role: MessageRole = role
        .parse()
        .map_err(|e| DbError::Corrupt(format!("stored message role: {e}")))?;
    let time: Option<i64> = row.try_get(at + 2)?;
    Ok(Message {
        role,
        content: row.try_get(at + 1)?,
        timestamp: time.map(time_from_sql).transpose()?,
    })
}

/// The episodes of `rows` with their messages, in the order of `rows`.
fn with_messages(db: &mut Db<'_, '_>, scope: i64, rows: &[Row]) -> DbResult<Vec<Episode>> {
    let mut episodes: Vec<(i64, Episode)> = rows
        .iter()
        .map(|row| read_episode(row, 0))
        .collect::<DbResult<_>>()?;
    fill_messages(db, scope, &mut episodes)?;
    Ok(episodes.into_iter().map(|(_, episode)| episode).collect())
}

/// Reads the messages of `episodes`, by turn.
fn fill_messages(db: &mut Db<'_, '_>, scope: i64, episodes: &mut [(i64, Episode)]) -> DbResult<()> {
    if episodes.is_empty() {
        return Ok(());
    }
    let numbers: Vec<i64> = episodes.iter().map(|(n, _)| *n).collect();
    let at: HashMap<i64, usize> = numbers
        .iter()
        .enumerate()
        .map(|(index, n)| (*n, index))
        .collect();
    for row in db.query(
        "SELECT episode, role, content, at FROM messages WHERE scope = $1 \
         AND episode = ANY($2) ORDER BY episode, turn",
        &[&scope, &numbers],
    )? {
        let n: i64 = row.try_get(0)?;
        if let Some((_, episode)) = at.get(&n).and_then(|index| episodes.get_mut(*index)) {
            episode.messages.push(read_message(&row, 1)?);
        }
    }
    Ok(())
}

/// The scope's episode `id` with its messages, read through `db`.
pub(crate) fn episode_in(db: &mut Db<'_, '_>, scope: i64, id: &str) -> DbResult<Option<Episode>> {
    let sql = format!(
        "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = $1 \
         AND id_hash = hashtextextended($2, 0) AND id = $2"
    );
    let rows = db.query(&sql, &[&scope, &id])?;
    Ok(with_messages(db, scope, &rows)?.pop())
}

/// Gives `sink` every episode of the scope with its messages, in archive order, reading
/// a page of episodes at a time through `db`.
pub(crate) fn export_episodes(
    db: &mut Db<'_, '_>,
    scope: i64,
    sink: &mut dyn FnMut(Episode) -> StoreResult<()>,
) -> DbResult<()> {
    /// Episodes read at a time.
    const EXPORT_PAGE: i64 = 256;
    let sql = format!(
        "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = $1 \
         AND (created_at, n) > ($2, $3) ORDER BY created_at, n LIMIT $4"
    );
    let (mut after_time, mut after_n) = (i64::MIN, i64::MIN);
    loop {
        let rows = db.query(&sql, &[&scope, &after_time, &after_n, &EXPORT_PAGE])?;
        let mut page: Vec<(i64, Episode)> = rows
            .iter()
            .map(|row| read_episode(row, 0))
            .collect::<DbResult<_>>()?;
        let Some((n, last)) = page.last() else {
            return Ok(());
        };
        (after_time, after_n) = (last.created_at.unix_micros(), *n);
        fill_messages(db, scope, &mut page)?;
        for (_, episode) in page {
            sink(episode).map_err(DbError::Store)?;
        }
    }
}

/// The episodes of the scope matching `condition`, oldest first, with their messages.
fn episodes_where(db: &mut Db<'_, '_>, scope: i64, condition: &str) -> DbResult<Vec<Episode>> {
    let sql = format!(
        "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = $1 {condition} \
         ORDER BY created_at, n"
    );
    let rows = db.query(&sql, &[&scope])?;
    with_messages(db, scope, &rows)
}

impl Postgres {
    /// Runs `f` in one read-only repeatable-read transaction: one snapshot of the scope.
    /// `f` may run twice: on a replica that failed, then on the primary.
    fn snapshot<T>(
        &self,
        mut f: impl FnMut(&mut Db<'_, '_>, i64) -> DbResult<T>,
    ) -> StoreResult<T> {
        self.with_conn(|conn, scope| {
            let Connection {
                client, statements, ..
            } = conn;
            let mut tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let value = f(&mut Db::new(&mut tx, statements), scope)?;
            tx.commit()?;
            Ok(value)
        })
    }
}

/// `search_messages` in one snapshot: see the module documentation.
fn search_messages(
    db: &mut Db<'_, '_>,
    scope: i64,
    query: &MessageQuery<'_>,
    weighting: &dyn TermWeighting,
    terms: &[String],
) -> DbResult<Vec<MessageHit>> {
    let limit = query.limit.min(MAX_SEARCH_LIMIT);
    let stats = match db.query_opt(
        "SELECT message_count, message_len FROM scopes WHERE id = $1",
        &[&scope],
    )? {
        Some(row) => {
            let (count, len): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            MessageStats {
                messages: u64::try_from(count).unwrap_or(0),
                total_len: u64::try_from(len).unwrap_or(0),
            }
        }
        None => MessageStats::default(),
    };
    let keys: Vec<Vec<u8>> = terms.iter().map(|term| text_key(term)).collect();
    let mut known: HashMap<Vec<u8>, (i64, i64)> = HashMap::with_capacity(keys.len());
    for row in db.query(
        "SELECT term_key, id, df FROM message_terms WHERE scope = $1 AND term_key = ANY($2)",
        &[&scope, &keys],
    )? {
        known.insert(row.try_get(0)?, (row.try_get(1)?, row.try_get(2)?));
    }
    // By query position: each term's document frequency, and its token in the stored term
    // documents (none for a term the scope never held).
    let mut df = Vec::with_capacity(keys.len());
    let mut tokens = Vec::with_capacity(keys.len());
    for key in &keys {
        match known.get(key) {
            Some((id, count)) => {
                df.push(usize::try_from(*count).unwrap_or(0));
                tokens.push(format!("t{id}"));
            }
            None => {
                df.push(0);
                tokens.push(String::new());
            }
        }
    }
    let expression = tokens
        .iter()
        .filter(|token| !token.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" | ");
    if expression.is_empty() {
        return Ok(Vec::new());
    }
    // Messages said after `as_of` neither score nor lend: they are not candidates.
    let as_of = query.as_of.map(Timestamp::unix_micros);
    let mut candidates = Vec::new();
    for row in db.query(
        "SELECT episode, turn, at, terms FROM messages WHERE scope = $1 \
         AND terms_tsv @@ to_tsquery('simple', $2) \
         AND ($3::BIGINT IS NULL OR at IS NULL OR at <= $3)",
        &[&scope, &expression, &as_of],
    )? {
        let (episode, turn): (i64, i32) = (row.try_get(0)?, row.try_get(1)?);
        let at: Option<i64> = row.try_get(2)?;
        let document: String = row.try_get(3)?;
        let turn = usize::try_from(turn).map_err(|_| DbError::Corrupt(format!("turn {turn}")))?;
        candidates.push(Candidate::from_terms(
            MessageKey::new(episode_key(episode)?, turn),
            at.map(time_from_sql).transpose()?,
            &document,
            &tokens,
        ));
    }
    let ranked = messages::rank(query, weighting, &df, stats, candidates);
    // The rows of the best keys, in rounds (a neighbour past an episode's end has none,
    // and `as_of` rejects a neighbour said after it).
    let mut hits = Vec::with_capacity(limit.min(ranked.len()));
    let mut rest = ranked.as_slice();
    while hits.len() < limit && !rest.is_empty() {
        let take = ((limit - hits.len()) * 2).max(READ_ROUND).min(rest.len());
        let Some((round, tail)) = rest.split_at_checked(take) else {
            break;
        };
        rest = tail;
        let (episodes, turns): (Vec<i64>, Vec<i32>) = round
            .iter()
            .map(|(key, _)| {
                (
                    i64::try_from(key.episode).unwrap_or(i64::MAX),
                    i32::try_from(key.turn).unwrap_or(i32::MAX),
                )
            })
            .unzip();
        let mut rows: HashMap<MessageKey, (String, String, String, Message)> = HashMap::new();
        for row in db.query(
            "SELECT m.episode, m.turn, m.role, m.content, m.at, e.id, e.title, e.summary \
             FROM unnest($2::BIGINT[], $3::INTEGER[]) AS k(episode, turn) \
             JOIN messages AS m ON m.scope = $1 AND m.episode = k.episode AND m.turn = k.turn \
             JOIN episodes AS e ON e.scope = $1 AND e.n = m.episode",
            &[&scope, &episodes, &turns],
        )? {
            let (episode, turn): (i64, i32) = (row.try_get(0)?, row.try_get(1)?);
            let turn =
                usize::try_from(turn).map_err(|_| DbError::Corrupt(format!("turn {turn}")))?;
            let key = MessageKey::new(episode_key(episode)?, turn);
            rows.insert(
                key,
                (
                    row.try_get(5)?,
                    row.try_get(6)?,
                    row.try_get(7)?,
                    read_message(&row, 2)?,
                ),
            );
        }
        for (key, score) in round {
            if hits.len() >= limit {
                break;
            }
            let Some((episode_id, episode_title, episode_summary, message)) = rows.remove(key)
            else {
                continue;
            };
            if !messages::said_by(&message, query.as_of) {
                continue;
            }
            hits.push(MessageHit {
                episode_id,
                episode_title,
                episode_summary,
                turn: key.turn_index(),
                message,
                score: *score,
            });
        }
    }
    Ok(hits)
}

impl EpisodeReads for Postgres {
    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.snapshot(|db, scope| episode_in(db, scope, id))
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.snapshot(|db, scope| episodes_where(db, scope, ""))
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        let analyzed = self.episode_analyzer.analyze(query);
        let terms: HashSet<&str> = analyzed.iter().map(String::as_str).collect();
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let wanted: Vec<&str> = terms.iter().copied().collect();
        self.snapshot(|db, scope| {
            let sql = format!(
                "SELECT {EPISODE_COLUMNS}, terms FROM episodes \
                 WHERE scope = $1 AND terms && $2::TEXT[]"
            );
            let mut numbers: HashMap<String, i64> = HashMap::new();
            let mut scored = Vec::new();
            for row in db.query(&sql, &[&scope, &wanted])? {
                let (n, episode) = read_episode(&row, 0)?;
                let held: Vec<String> = row.try_get(EPISODE_COLUMN_COUNT)?;
                let score = held
                    .iter()
                    .filter(|term| terms.contains(term.as_str()))
                    .count();
                numbers.insert(episode.id.clone(), n);
                scored.push((score, episode_key(n)?, episode));
            }
            // Ranked without their messages; only the winners' are read.
            let mut ranked: Vec<(i64, Episode)> = messages::rank_episodes(scored, limit)
                .into_iter()
                .map(|episode| (numbers.get(&episode.id).copied().unwrap_or(0), episode))
                .collect();
            fill_messages(db, scope, &mut ranked)?;
            Ok(ranked.into_iter().map(|(_, episode)| episode).collect())
        })
    }

    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>> {
        let terms = messages::query_terms(&self.episode_analyzer, query.text);
        if terms.is_empty() || query.limit == 0 {
            return Ok(Vec::new());
        }
        self.snapshot(|db, scope| search_messages(db, scope, query, weighting, &terms))
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<usize> {
        let changed = self.with_primary(|conn, scope| {
            Ok(conn.client.execute(
                "UPDATE episodes SET extracted_at = $3 \
                 WHERE scope = $1 AND id_hash = hashtextextended($2, 0) AND id = $2",
                &[&scope, &id, &at.unix_micros()],
            )?)
        })?;
        Ok(usize::try_from(changed).unwrap_or(usize::MAX))
    }

    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        self.snapshot(|db, scope| episodes_where(db, scope, "AND extracted_at IS NULL"))
    }
}

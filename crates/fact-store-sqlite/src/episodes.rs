//! The episodes of a [`SqliteFactStore`](crate::SqliteFactStore) ([`EpisodeReads`]): the `episodes` table of its scope and
//! the messages of each episode (`messages.rs`).
//!
//! An episode is a row of `episodes` (title, summary, tags as a JSON array, times) and
//! its messages, kept once, as rows of `messages` ordered by turn. `episode_fts` indexes
//! the analyzer's terms of each episode's title and summary (the default analyzer, as
//! [`InMemoryEpisodeStore`](fact_store::InMemoryEpisodeStore) uses); `search_episodes` lets
//! FTS5 find the episodes holding any query term and ranks them with the shared
//! [`rank_episodes`]. Every write goes through the rows of one `BEGIN IMMEDIATE`
//! transaction ([`MemoryRows`](fact_store_sql::long_term::MemoryRows)), as a long-term
//! commit's episode writes do.

use std::collections::{HashMap, HashSet};

use fact_model::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::messages::{index_messages, read_messages, search, unindex_messages};
use crate::driver::Sqlite;
use crate::error::{DbError, DbResult};
use fact_store::backend::messages::rank_episodes;
use fact_store::{
    Analyzer, Episode, MessageHit, MessageQuery, StoreError, StoreResult, TermWeighting,
};
use fact_store_sql::EpisodeReads;
use fact_store_sql::codec::{metadata_from_text, metadata_to_text, time_from_sql};

/// The episode columns every episode query selects, in the order [`read_episode`] reads.
const EPISODE_COLUMNS: &str = "n, id, title, summary, tags, created_at, extracted_at, metadata";

/// The row number and the episode in columns `at..`, without its messages.
fn read_episode(row: &Row<'_>, at: usize) -> DbResult<(i64, Episode)> {
    let tags: String = row.get(at + 4)?;
    let tags: Vec<String> = serde_json::from_str(&tags)
        .map_err(|e| DbError::Corrupt(format!("stored episode tags: {e}")))?;
    let extracted_at: Option<i64> = row.get(at + 6)?;
    let episode = Episode {
        id: row.get(at + 1)?,
        title: row.get(at + 2)?,
        summary: row.get(at + 3)?,
        messages: Vec::new(),
        tags,
        created_at: time_from_sql(row.get(at + 5)?)?,
        extracted_at: extracted_at.map(time_from_sql).transpose()?,
        metadata: metadata_from_text(row.get::<_, Option<String>>(at + 7)?.as_deref())?,
    };
    Ok((row.get(at)?, episode))
}

/// The episodes a query of [`EPISODE_COLUMNS`] selects (with `?1` the scope), with their
/// messages.
fn query_episodes(conn: &Connection, sql: &str, scope: i64) -> DbResult<Vec<Episode>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query([scope])?;
    let mut found = Vec::new();
    while let Some(row) = rows.next()? {
        found.push(read_episode(row, 0)?);
    }
    drop(rows);
    found
        .into_iter()
        .map(|(n, mut episode)| {
            episode.messages = read_messages(conn, scope, n)?;
            Ok(episode)
        })
        .collect()
}

/// Gives `sink` every episode of `scope` with its messages, in archive order, reading
/// [`EXPORT_PAGE`] episodes at a time (in the caller's transaction).
pub(super) fn export_episodes(
    conn: &Connection,
    scope: i64,
    sink: &mut dyn FnMut(Episode) -> StoreResult<()>,
) -> DbResult<()> {
    /// Episodes read at a time.
    const EXPORT_PAGE: i64 = 256;
    let sql = format!(
        "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 \
         AND (created_at, n) > (?2, ?3) ORDER BY created_at, n LIMIT ?4"
    );
    let (mut after_time, mut after_n) = (i64::MIN, i64::MIN);
    loop {
        let mut page = Vec::new();
        {
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![scope, after_time, after_n, EXPORT_PAGE])?;
            while let Some(row) = rows.next()? {
                page.push(read_episode(row, 0)?);
            }
        }
        let Some((n, last)) = page.last() else {
            return Ok(());
        };
        (after_time, after_n) = (last.created_at.unix_micros(), *n);
        for (n, mut episode) in page {
            episode.messages = read_messages(conn, scope, n)?;
            sink(episode).map_err(DbError::Store)?;
        }
    }
}

/// The episode `id` of `scope` with its messages, read in the caller's transaction.
pub(super) fn episode_in(conn: &Connection, scope: i64, id: &str) -> DbResult<Option<Episode>> {
    let sql = format!("SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 AND id = ?2");
    let found = conn
        .prepare_cached(&sql)?
        .query_row(params![scope, id], |row| Ok(read_episode(row, 0)))
        .optional()?
        .transpose()?;
    match found {
        Some((n, mut episode)) => {
            episode.messages = read_messages(conn, scope, n)?;
            Ok(Some(episode))
        }
        None => Ok(None),
    }
}

/// An FTS5 string literal.
fn quoted(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The title and summary terms `episode_fts` indexes.
fn title_document(episode: &Episode, analyzer: &Analyzer) -> String {
    let text = format!("{} {}", episode.title, episode.summary);
    analyzer.analyze(&text).join(" ")
}

/// Stores `episode` in `scope`, replacing the one with its id (which keeps its row number:
/// its old messages leave the index, the new ones enter it).
pub(super) fn put_episode(
    conn: &Connection,
    scope: i64,
    episode: &Episode,
    analyzer: &Analyzer,
) -> DbResult<()> {
    let tags = serde_json::to_string(&episode.tags).map_err(|e| {
        DbError::Store(StoreError::Backend {
            message: format!("episode tags: {e}"),
        })
    })?;
    let existing: Option<i64> = conn
        .prepare_cached("SELECT n FROM episodes WHERE scope = ?1 AND id = ?2")?
        .query_row(params![scope, episode.id], |row| row.get(0))
        .optional()?;
    let created_at = episode.created_at.unix_micros();
    let extracted_at = episode.extracted_at.map(Timestamp::unix_micros);
    let n = match existing {
        Some(n) => {
            unindex_messages(conn, scope, n)?;
            conn.prepare_cached(
                "UPDATE episodes SET title = ?3, summary = ?4, tags = ?5, created_at = ?6, \
                 extracted_at = ?7, metadata = ?8 WHERE scope = ?1 AND n = ?2",
            )?
            .execute(params![
                scope,
                n,
                episode.title,
                episode.summary,
                tags,
                created_at,
                extracted_at,
                metadata_to_text(&episode.metadata),
            ])?;
            conn.prepare_cached("DELETE FROM episode_fts WHERE rowid = ?1")?
                .execute([n])?;
            n
        }
        None => {
            conn.prepare_cached(
                "INSERT INTO episodes (scope, id, title, summary, tags, created_at, \
                 extracted_at, metadata) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                scope,
                episode.id,
                episode.title,
                episode.summary,
                tags,
                created_at,
                extracted_at,
                metadata_to_text(&episode.metadata),
            ])?;
            conn.last_insert_rowid()
        }
    };
    conn.prepare_cached("INSERT INTO episode_fts (rowid, terms) VALUES (?1, ?2)")?
        .execute(params![n, title_document(episode, analyzer)])?;
    index_messages(conn, scope, n, &episode.messages, analyzer)
}

/// Indexes the title and summary of episode `id` of `scope` again (after they changed).
pub(super) fn reindex_title(
    conn: &Connection,
    scope: i64,
    id: &str,
    analyzer: &Analyzer,
) -> DbResult<()> {
    let found: Option<(i64, String, String)> = conn
        .prepare_cached("SELECT n, title, summary FROM episodes WHERE scope = ?1 AND id = ?2")?
        .query_row(params![scope, id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })
        .optional()?;
    let Some((n, title, summary)) = found else {
        return Ok(());
    };
    conn.prepare_cached("DELETE FROM episode_fts WHERE rowid = ?1")?
        .execute([n])?;
    let document = analyzer.analyze(&format!("{title} {summary}")).join(" ");
    conn.prepare_cached("INSERT INTO episode_fts (rowid, terms) VALUES (?1, ?2)")?
        .execute(params![n, document])?;
    Ok(())
}

/// Deletes the episode `id` of `scope` with its messages, from both indexes; whether
/// there was one.
pub(super) fn delete_episode(conn: &Connection, scope: i64, id: &str) -> DbResult<bool> {
    let existing: Option<i64> = conn
        .prepare_cached("SELECT n FROM episodes WHERE scope = ?1 AND id = ?2")?
        .query_row(params![scope, id], |row| row.get(0))
        .optional()?;
    let Some(n) = existing else {
        return Ok(false);
    };
    unindex_messages(conn, scope, n)?;
    conn.prepare_cached("DELETE FROM episode_fts WHERE rowid = ?1")?
        .execute([n])?;
    conn.prepare_cached("DELETE FROM episodes WHERE scope = ?1 AND n = ?2")?
        .execute(params![scope, n])?;
    Ok(true)
}

impl Sqlite {
    /// The distinct terms of an episode's title and summary.
    fn episode_terms(&self, episode: &Episode) -> HashSet<String> {
        let text = format!("{} {}", episode.title, episode.summary);
        self.episode_analyzer.analyze(&text).into_iter().collect()
    }
}

impl EpisodeReads for Sqlite {
    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.with_conn(|conn, scope| {
            let tx = conn.transaction()?;
            let sql =
                format!("SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 AND id = ?2");
            let found = tx
                .prepare_cached(&sql)?
                .query_row(params![scope, id], |row| Ok(read_episode(row, 0)))
                .optional()?
                .transpose()?;
            let episode = match found {
                Some((n, mut episode)) => {
                    episode.messages = read_messages(&tx, scope, n)?;
                    Some(episode)
                }
                None => None,
            };
            tx.commit()?;
            Ok(episode)
        })
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.with_conn(|conn, scope| {
            let tx = conn.transaction()?;
            let sql = format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 ORDER BY created_at, n"
            );
            let episodes = query_episodes(&tx, &sql, scope)?;
            tx.commit()?;
            Ok(episodes)
        })
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        let analyzed = self.episode_analyzer.analyze(query);
        let terms: HashSet<&str> = analyzed.iter().map(String::as_str).collect();
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let mut ordered: Vec<&str> = terms.iter().copied().collect();
        ordered.sort_unstable();
        let expression = ordered
            .iter()
            .map(|term| quoted(term))
            .collect::<Vec<_>>()
            .join(" OR ");
        self.with_conn(|conn, scope| {
            let tx = conn.transaction()?;
            let sql = format!(
                "SELECT {} FROM episode_fts CROSS JOIN episodes AS e \
                 ON e.n = episode_fts.rowid WHERE episode_fts MATCH ?1 AND e.scope = ?2",
                EPISODE_COLUMNS
                    .split(", ")
                    .map(|column| format!("e.{column}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut scored = Vec::new();
            let mut numbers: HashMap<String, i64> = HashMap::new();
            {
                let mut stmt = tx.prepare_cached(&sql)?;
                let mut rows = stmt.query(params![expression, scope])?;
                while let Some(row) = rows.next()? {
                    let (n, episode) = read_episode(row, 0)?;
                    // FTS5 folds diacritics; the count uses the analyzer's own terms, as
                    // in memory.
                    let held = self.episode_terms(&episode);
                    let score = terms.iter().filter(|term| held.contains(**term)).count();
                    numbers.insert(episode.id.clone(), n);
                    scored.push((score, u64::try_from(n).unwrap_or(0), episode));
                }
            }
            // Only the winners' messages are read.
            let mut ranked = rank_episodes(scored, limit);
            for episode in &mut ranked {
                if let Some(n) = numbers.get(&episode.id) {
                    episode.messages = read_messages(&tx, scope, *n)?;
                }
            }
            tx.commit()?;
            Ok(ranked)
        })
    }

    fn search_messages(
        &self,
        query: &MessageQuery<'_>,
        weighting: &dyn TermWeighting,
    ) -> StoreResult<Vec<MessageHit>> {
        self.with_conn(|conn, scope| search(conn, scope, &self.episode_analyzer, query, weighting))
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<usize> {
        self.with_conn(|conn, scope| {
            Ok(conn
                .prepare_cached(
                    "UPDATE episodes SET extracted_at = ?3 WHERE scope = ?1 AND id = ?2",
                )?
                .execute(params![scope, id, at.unix_micros()])?)
        })
    }

    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        self.with_conn(|conn, scope| {
            let tx = conn.transaction()?;
            let sql = format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 AND extracted_at IS NULL \
                 ORDER BY created_at, n"
            );
            let episodes = query_episodes(&tx, &sql, scope)?;
            tx.commit()?;
            Ok(episodes)
        })
    }
}

//! The [`EpisodeStore`] of a [`SqliteFactStore`]: the `episodes` table of its scope.
//!
//! Transcripts are stored as plain text and tags as a JSON array. `episode_fts` indexes
//! the analyzer's terms of each episode's title and summary (the default analyzer, as
//! [`InMemoryEpisodeStore`](crate::InMemoryEpisodeStore) uses); `search_episodes` lets
//! FTS5 find the episodes holding any query term and ranks them as the in-memory store
//! does: more distinct query terms first, then newer, then the earlier stored.

use std::collections::HashSet;

use fact_model::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};

use super::SqliteFactStore;
use crate::sql::codec::time_from_sql;
use crate::sql::error::{DbError, DbResult};
use crate::sql::search::rank_episodes;
use crate::{Episode, EpisodeStore, StoreError, StoreResult};

/// The episode columns every episode query selects, in the order [`read_episode`] reads.
const EPISODE_COLUMNS: &str = "id, title, summary, transcript, tags, created_at, extracted_at";

fn read_episode(row: &Row<'_>, at: usize) -> DbResult<Episode> {
    let tags: String = row.get(at + 4)?;
    let tags: Vec<String> = serde_json::from_str(&tags)
        .map_err(|e| DbError::Corrupt(format!("stored episode tags: {e}")))?;
    let extracted_at: Option<i64> = row.get(at + 6)?;
    Ok(Episode {
        id: row.get(at)?,
        title: row.get(at + 1)?,
        summary: row.get(at + 2)?,
        transcript: row.get(at + 3)?,
        tags,
        created_at: time_from_sql(row.get(at + 5)?)?,
        extracted_at: extracted_at.map(time_from_sql).transpose()?,
    })
}

fn query_episodes(conn: &Connection, sql: &str, scope: i64) -> DbResult<Vec<Episode>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query([scope])?;
    let mut episodes = Vec::new();
    while let Some(row) = rows.next()? {
        episodes.push(read_episode(row, 0)?);
    }
    Ok(episodes)
}

/// An FTS5 string literal.
fn quoted(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

impl SqliteFactStore {
    /// The distinct terms of an episode's title and summary.
    fn episode_terms(&self, episode: &Episode) -> HashSet<String> {
        let text = format!("{} {}", episode.title, episode.summary);
        self.episode_analyzer.analyze(&text).into_iter().collect()
    }
}

impl EpisodeStore for SqliteFactStore {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        let text = format!("{} {}", episode.title, episode.summary);
        let document = self.episode_analyzer.analyze(&text).join(" ");
        let tags = serde_json::to_string(&episode.tags).map_err(|e| StoreError::Backend {
            message: format!("episode tags: {e}"),
        })?;
        self.with_conn(|conn, scope| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let existing: Option<i64> = tx
                .prepare_cached("SELECT n FROM episodes WHERE scope = ?1 AND id = ?2")?
                .query_row(params![scope, episode.id], |row| row.get(0))
                .optional()?;
            let created_at = episode.created_at.unix_micros();
            let extracted_at = episode.extracted_at.map(Timestamp::unix_micros);
            let n = match existing {
                Some(n) => {
                    tx.prepare_cached(
                        "UPDATE episodes SET title = ?2, summary = ?3, transcript = ?4, tags = ?5, \
                         created_at = ?6, extracted_at = ?7 WHERE n = ?1",
                    )?
                    .execute(params![
                        n,
                        episode.title,
                        episode.summary,
                        episode.transcript,
                        tags,
                        created_at,
                        extracted_at,
                    ])?;
                    tx.prepare_cached("DELETE FROM episode_fts WHERE rowid = ?1")?
                        .execute([n])?;
                    n
                }
                None => {
                    tx.prepare_cached(
                        "INSERT INTO episodes (scope, id, title, summary, transcript, tags, \
                         created_at, extracted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    )?
                    .execute(params![
                        scope,
                        episode.id,
                        episode.title,
                        episode.summary,
                        episode.transcript,
                        tags,
                        created_at,
                        extracted_at,
                    ])?;
                    tx.last_insert_rowid()
                }
            };
            tx.prepare_cached("INSERT INTO episode_fts (rowid, terms) VALUES (?1, ?2)")?
                .execute(params![n, document])?;
            tx.commit()?;
            Ok(())
        })
    }

    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.with_conn(|conn, scope| {
            let sql =
                format!("SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 AND id = ?2");
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![scope, id])?;
            match rows.next()? {
                Some(row) => Ok(Some(read_episode(row, 0)?)),
                None => Ok(None),
            }
        })
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.with_conn(|conn, scope| {
            let sql = format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 ORDER BY created_at, n"
            );
            query_episodes(conn, &sql, scope)
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
        let candidates = self.with_conn(|conn, scope| {
            let sql = format!(
                "SELECT e.n, {} FROM episode_fts CROSS JOIN episodes AS e \
                 ON e.n = episode_fts.rowid WHERE episode_fts MATCH ?1 AND e.scope = ?2",
                EPISODE_COLUMNS
                    .split(", ")
                    .map(|column| format!("e.{column}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut stmt = conn.prepare_cached(&sql)?;
            let mut rows = stmt.query(params![expression, scope])?;
            let mut candidates = Vec::new();
            while let Some(row) = rows.next()? {
                let n: i64 = row.get(0)?;
                candidates.push((n, read_episode(row, 1)?));
            }
            Ok(candidates)
        })?;
        // FTS5 folds diacritics; the count uses the analyzer's own terms, as in memory.
        let scored = candidates
            .into_iter()
            .map(|(n, episode)| {
                let held = self.episode_terms(&episode);
                let score = terms.iter().filter(|term| held.contains(**term)).count();
                (score, n, episode)
            })
            .collect();
        Ok(rank_episodes(scored, limit))
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        let changed = self.with_conn(|conn, scope| {
            Ok(conn
                .prepare_cached(
                    "UPDATE episodes SET extracted_at = ?3 WHERE scope = ?1 AND id = ?2",
                )?
                .execute(params![scope, id, at.unix_micros()])?)
        })?;
        if changed == 0 {
            return Err(StoreError::EpisodeNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        self.with_conn(|conn, scope| {
            let sql = format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = ?1 AND extracted_at IS NULL \
                 ORDER BY created_at, n"
            );
            query_episodes(conn, &sql, scope)
        })
    }
}

//! The [`EpisodeStore`] of a [`PgFactStore`]: the `episodes` table of its scope.
//!
//! Transcripts are stored as plain text and tags as a JSON array. `terms` holds the
//! analyzer's distinct terms of the title and summary (the default analyzer, as
//! [`InMemoryEpisodeStore`](crate::InMemoryEpisodeStore) uses) under a GIN index;
//! `search_episodes` takes the episodes holding any query term (`terms && $2`) and ranks
//! them as the in-memory store does: more distinct query terms first, then newer, then
//! the earlier stored.

use std::collections::HashSet;

use fact_model::Timestamp;
use postgres::Row;

use super::PgFactStore;
use super::pool::Connection;
use crate::sql::codec::time_from_sql;
use crate::sql::error::{DbError, DbResult};
use crate::sql::search::rank_episodes;
use crate::{Episode, EpisodeStore, StoreError, StoreResult};

/// The episode columns every episode query selects, in the order [`read_episode`] reads.
const EPISODE_COLUMNS: &str = "id, title, summary, transcript, tags, created_at, extracted_at";

fn read_episode(row: &Row, at: usize) -> DbResult<Episode> {
    let tags: String = row.try_get(at + 4)?;
    let tags: Vec<String> = serde_json::from_str(&tags)
        .map_err(|e| DbError::Corrupt(format!("stored episode tags: {e}")))?;
    let extracted_at: Option<i64> = row.try_get(at + 6)?;
    Ok(Episode {
        id: row.try_get(at)?,
        title: row.try_get(at + 1)?,
        summary: row.try_get(at + 2)?,
        transcript: row.try_get(at + 3)?,
        tags,
        created_at: time_from_sql(row.try_get(at + 5)?)?,
        extracted_at: extracted_at.map(time_from_sql).transpose()?,
    })
}

fn read_episodes(rows: &[Row]) -> DbResult<Vec<Episode>> {
    rows.iter().map(|row| read_episode(row, 0)).collect()
}

impl PgFactStore {
    /// The distinct terms of an episode's title and summary, sorted.
    fn episode_terms(&self, episode: &Episode) -> Vec<String> {
        let text = format!("{} {}", episode.title, episode.summary);
        let terms: HashSet<String> = self.episode_analyzer.analyze(&text).into_iter().collect();
        let mut terms: Vec<String> = terms.into_iter().collect();
        terms.sort_unstable();
        terms
    }
}

fn episodes_where(conn: &mut Connection, condition: &str, scope: i64) -> DbResult<Vec<Episode>> {
    let sql = format!(
        "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = $1 {condition} \
         ORDER BY created_at, n"
    );
    read_episodes(&super::query(conn, &sql, &[&scope])?)
}

impl EpisodeStore for PgFactStore {
    fn put_episode(&self, episode: &Episode) -> StoreResult<()> {
        let terms = self.episode_terms(episode);
        let tags = serde_json::to_string(&episode.tags).map_err(|e| StoreError::Backend {
            message: format!("episode tags: {e}"),
        })?;
        let created_at = episode.created_at.unix_micros();
        let extracted_at = episode.extracted_at.map(Timestamp::unix_micros);
        self.with_conn(|conn, scope| {
            let mut tx = conn.client.transaction()?;
            // Episodes of one scope take turns on the scope's row, as facts do.
            tx.execute("SELECT 1 FROM scopes WHERE id = $1 FOR UPDATE", &[&scope])?;
            let updated = tx.execute(
                "UPDATE episodes SET title = $3, summary = $4, transcript = $5, tags = $6, \
                 created_at = $7, extracted_at = $8, terms = $9 \
                 WHERE scope = $1 AND id_hash = hashtextextended($2, 0) AND id = $2",
                &[
                    &scope,
                    &episode.id,
                    &episode.title,
                    &episode.summary,
                    &episode.transcript,
                    &tags,
                    &created_at,
                    &extracted_at,
                    &terms,
                ],
            )?;
            if updated == 0 {
                tx.execute(
                    "INSERT INTO episodes (scope, id, title, summary, transcript, tags, \
                     created_at, extracted_at, terms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                    &[
                        &scope,
                        &episode.id,
                        &episode.title,
                        &episode.summary,
                        &episode.transcript,
                        &tags,
                        &created_at,
                        &extracted_at,
                        &terms,
                    ],
                )?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn episode(&self, id: &str) -> StoreResult<Option<Episode>> {
        self.with_conn(|conn, scope| {
            let sql = format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes WHERE scope = $1 \
                 AND id_hash = hashtextextended($2, 0) AND id = $2"
            );
            let rows = super::query(conn, &sql, &[&scope, &id])?;
            rows.first().map(|row| read_episode(row, 0)).transpose()
        })
    }

    fn episodes(&self) -> StoreResult<Vec<Episode>> {
        self.with_conn(|conn, scope| episodes_where(conn, "", scope))
    }

    fn search_episodes(&self, query: &str, limit: usize) -> StoreResult<Vec<Episode>> {
        let analyzed = self.episode_analyzer.analyze(query);
        let terms: HashSet<&str> = analyzed.iter().map(String::as_str).collect();
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let wanted: Vec<&str> = terms.iter().copied().collect();
        let candidates = self.with_conn(|conn, scope| {
            let sql = format!(
                "SELECT n, terms, {EPISODE_COLUMNS} FROM episodes \
                 WHERE scope = $1 AND terms && $2::TEXT[]"
            );
            let rows = super::query(conn, &sql, &[&scope, &wanted])?;
            rows.iter()
                .map(|row| {
                    let n: i64 = row.try_get(0)?;
                    let held: Vec<String> = row.try_get(1)?;
                    Ok((n, held, read_episode(row, 2)?))
                })
                .collect::<DbResult<Vec<_>>>()
        })?;
        let scored = candidates
            .into_iter()
            .map(|(n, held, episode)| {
                let score = held
                    .iter()
                    .filter(|term| terms.contains(term.as_str()))
                    .count();
                (score, n, episode)
            })
            .collect();
        Ok(rank_episodes(scored, limit))
    }

    fn mark_extracted(&self, id: &str, at: Timestamp) -> StoreResult<()> {
        let changed = self.with_conn(|conn, scope| {
            Ok(conn.client.execute(
                "UPDATE episodes SET extracted_at = $3 \
                 WHERE scope = $1 AND id_hash = hashtextextended($2, 0) AND id = $2",
                &[&scope, &id, &at.unix_micros()],
            )?)
        })?;
        if changed == 0 {
            return Err(StoreError::EpisodeNotFound { id: id.to_owned() });
        }
        Ok(())
    }

    fn pending_extraction(&self) -> StoreResult<Vec<Episode>> {
        self.with_conn(|conn, scope| episodes_where(conn, "AND extracted_at IS NULL", scope))
    }
}

//! Long-term memory on PostgreSQL: the [`MemoryRows`] of a write transaction (aliases,
//! profile versions, episodes indexed as their messages) and the [`MemoryReads`] of a
//! [`PgFactStore`](crate::PgFactStore).
//!
//! A message is indexed by its term document: its analyzed terms (the episode analyzer's)
//! as this scope's message-term ids, `t12 t7 t12`, from which the database generates the
//! `tsvector` its GIN index holds. Storing, replacing and deleting messages keep each
//! term's document frequency and the scope's message count and total length in the same
//! transaction, under the scope's row lock, so a search reads statistics that match the
//! rows. The schema is in `schema.rs` (version 3).

use fact_model::{FactId, ProfileField, SessionFact, Timestamp};
use postgres::{IsolationLevel, Row};

use crate::client::query;
use crate::codec::read_fact;
use crate::driver::Postgres;
use crate::error::{DbError, DbResult};
use crate::messages::{episode_terms, index_messages, unindex_messages};
use crate::pool::Connection;
use crate::rows::PgRows;
use crate::statements::{Db, text_key};
use fact_store::{
    Alias, Analyzer, Episode, EpisodeExtracted, EraseReport, ExportRecord, ProfileEntry,
    SnapshotRecord, StoreResult,
};
use fact_store_sql::MemoryReads;
use fact_store_sql::codec::{
    FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, id_from_sql, time_from_sql,
};
use fact_store_sql::long_term::MemoryRows;

/// The row number of the scope's episode `id`.
fn episode_number(db: &mut Db<'_, '_>, scope: i64, id: &str) -> DbResult<Option<i64>> {
    db.query_opt(
        "SELECT n FROM episodes WHERE scope = $1 AND id_hash = hashtextextended($2, 0) \
         AND id = $2",
        &[&scope, &id],
    )?
    .map(|row| Ok(row.try_get(0)?))
    .transpose()
}

/// An alias from the columns `alias, entity, at`.
fn read_alias(row: &Row) -> DbResult<Alias> {
    Ok(Alias {
        alias: row.try_get(0)?,
        entity: row.try_get(1)?,
        at: time_from_sql(row.try_get(2)?)?,
    })
}

/// A profile version from the columns `field, text, at`.
fn read_profile(row: &Row) -> DbResult<ProfileEntry> {
    let field: String = row.try_get(0)?;
    let field: ProfileField = field
        .parse()
        .map_err(|e| DbError::Corrupt(format!("stored profile field: {e}")))?;
    Ok(ProfileEntry {
        field,
        text: row.try_get(1)?,
        at: time_from_sql(row.try_get(2)?)?,
    })
}

const ALIASES: &str = "SELECT alias, entity, at FROM aliases WHERE scope = $1 ORDER BY seq";
const PROFILE: &str = "SELECT field, text, at FROM profile WHERE scope = $1 ORDER BY seq";

impl MemoryRows for PgRows<'_> {
    fn erase_scope(&mut self) -> DbResult<EraseReport> {
        PgRows::erase_scope(self)
    }

    fn alias_entity(&mut self, alias: &str) -> DbResult<Option<String>> {
        let (mut db, scope) = self.db();
        db.query_opt(
            "SELECT entity FROM aliases WHERE scope = $1 AND alias_key = $2 AND alias = $3",
            &[&scope, &text_key(alias), &alias],
        )?
        .map(|row| Ok(row.try_get(0)?))
        .transpose()
    }

    fn set_alias(&mut self, alias: &Alias) -> DbResult<()> {
        let (mut db, scope) = self.db();
        // Replacing keeps the row, and so its `seq`: the alias keeps its place.
        db.execute(
            "INSERT INTO aliases (scope, alias_key, alias, entity, at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (scope, alias_key) DO UPDATE SET entity = EXCLUDED.entity, at = EXCLUDED.at",
            &[
                &scope,
                &text_key(&alias.alias),
                &alias.alias,
                &alias.entity,
                &alias.at.unix_micros(),
            ],
        )?;
        Ok(())
    }

    fn remove_alias(&mut self, alias: &str) -> DbResult<()> {
        let (mut db, scope) = self.db();
        db.execute(
            "DELETE FROM aliases WHERE scope = $1 AND alias_key = $2",
            &[&scope, &text_key(alias)],
        )?;
        Ok(())
    }

    fn profile_versions(&mut self) -> DbResult<Vec<ProfileEntry>> {
        let (mut db, scope) = self.db();
        db.query(PROFILE, &[&scope])?
            .iter()
            .map(read_profile)
            .collect()
    }

    fn insert_profile(&mut self, entry: &ProfileEntry) -> DbResult<()> {
        let (mut db, scope) = self.db();
        db.execute(
            "INSERT INTO profile (scope, field, text, at) VALUES ($1, $2, $3, $4)",
            &[
                &scope,
                &entry.field.as_str(),
                &entry.text,
                &entry.at.unix_micros(),
            ],
        )?;
        Ok(())
    }

    fn episode(&mut self, id: &str) -> DbResult<Option<Episode>> {
        let (mut db, scope) = self.db();
        crate::episodes::episode_in(&mut db, scope, id)
    }

    fn put_episode(&mut self, episode: &Episode, analyzer: &Analyzer) -> DbResult<()> {
        let (mut db, scope) = self.db();
        let tags = serde_json::to_string(&episode.tags)
            .map_err(|e| DbError::Corrupt(format!("episode tags: {e}")))?;
        let terms = episode_terms(analyzer, episode);
        let created_at = episode.created_at.unix_micros();
        let extracted_at = episode.extracted_at.map(Timestamp::unix_micros);
        let metadata = (!episode.metadata.is_empty()).then(|| episode.metadata.to_json());
        let n = match episode_number(&mut db, scope, &episode.id)? {
            Some(n) => {
                // Replaced: the same number (its place), its old messages unindexed.
                unindex_messages(&mut db, scope, n)?;
                db.execute(
                    "UPDATE episodes SET title = $3, summary = $4, tags = $5, created_at = $6, \
                     extracted_at = $7, terms = $8, metadata = $9 WHERE scope = $1 AND n = $2",
                    &[
                        &scope,
                        &n,
                        &episode.title,
                        &episode.summary,
                        &tags,
                        &created_at,
                        &extracted_at,
                        &terms,
                        &metadata,
                    ],
                )?;
                n
            }
            None => {
                let row = db.query_opt(
                    "INSERT INTO episodes (scope, id, title, summary, tags, created_at, \
                     extracted_at, terms, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                     RETURNING n",
                    &[
                        &scope,
                        &episode.id,
                        &episode.title,
                        &episode.summary,
                        &tags,
                        &created_at,
                        &extracted_at,
                        &terms,
                        &metadata,
                    ],
                )?;
                match row {
                    Some(row) => row.try_get(0)?,
                    None => {
                        return Err(DbError::Corrupt(
                            "INSERT … RETURNING gave no episode number".into(),
                        ));
                    }
                }
            }
        };
        index_messages(&mut db, scope, n, &episode.messages, analyzer)
    }

    fn delete_episode(&mut self, id: &str) -> DbResult<bool> {
        let (mut db, scope) = self.db();
        let Some(n) = episode_number(&mut db, scope, id)? else {
            return Ok(false);
        };
        unindex_messages(&mut db, scope, n)?;
        db.execute(
            "DELETE FROM episodes WHERE scope = $1 AND n = $2",
            &[&scope, &n],
        )?;
        Ok(true)
    }

    fn mark_extracted(
        &mut self,
        extracted: &EpisodeExtracted,
        analyzer: &Analyzer,
    ) -> DbResult<bool> {
        let (mut db, scope) = self.db();
        let row = db.query_opt(
            "UPDATE episodes SET extracted_at = $3, title = coalesce($4, title), \
             summary = coalesce($5, summary) WHERE scope = $1 AND id = $2 \
             RETURNING n, title, summary",
            &[
                &scope,
                &extracted.id,
                &extracted.at.unix_micros(),
                &extracted.title,
                &extracted.summary,
            ],
        )?;
        let Some(row) = row else {
            return Ok(false);
        };
        if extracted.title.is_some() || extracted.summary.is_some() {
            // The title and summary terms `search_episodes` matches, made anew.
            let n: i64 = row.try_get(0)?;
            let title: String = row.try_get(1)?;
            let summary: String = row.try_get(2)?;
            let mut terms = analyzer.analyze(&format!("{title} {summary}"));
            terms.sort_unstable();
            terms.dedup();
            db.execute(
                "UPDATE episodes SET terms = $3 WHERE scope = $1 AND n = $2",
                &[&scope, &n, &terms],
            )?;
        }
        Ok(true)
    }
}

impl MemoryReads for Postgres {
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> StoreResult<()>) -> StoreResult<()> {
        /// Fact versions read at a time.
        const FACT_PAGE: i64 = 4096;
        let sql = format!(
            "SELECT {FACT_COLUMNS}, batch, seq FROM facts WHERE scope = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3"
        );
        // One repeatable-read snapshot, read a page at a time: memory stays flat. On the
        // primary, never a replica: a read retried on the primary after a replica failed
        // would give `sink` its records twice.
        self.with_primary(|conn, scope| {
            let Connection {
                client, statements, ..
            } = conn;
            let mut tx = client
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let db = &mut Db::new(&mut tx, statements);
            let mut after = i64::MIN;
            loop {
                let rows = db.query(&sql, &[&scope, &after, &FACT_PAGE])?;
                let Some(last) = rows.last() else {
                    break;
                };
                after = last.try_get(FACT_COLUMN_COUNT + 1)?;
                for row in &rows {
                    let batch = batch_from_sql(row.try_get(FACT_COLUMN_COUNT)?);
                    let fact = read_fact(row, 0)?;
                    sink(ExportRecord::Fact(SnapshotRecord { batch, fact }))
                        .map_err(DbError::Store)?;
                }
            }
            crate::episodes::export_episodes(db, scope, &mut |episode| {
                sink(ExportRecord::Episode(episode))
            })?;
            for row in db.query(ALIASES, &[&scope])? {
                sink(ExportRecord::Alias(read_alias(&row)?)).map_err(DbError::Store)?;
            }
            for row in db.query(PROFILE, &[&scope])? {
                sink(ExportRecord::Profile(read_profile(&row)?)).map_err(DbError::Store)?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn aliases(&self) -> StoreResult<Vec<Alias>> {
        self.with_conn(|conn, scope| {
            query(conn, ALIASES, &[&scope])?
                .iter()
                .map(read_alias)
                .collect()
        })
    }

    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(|conn, scope| {
            query(
                conn,
                "SELECT relation FROM facts WHERE scope = $1 AND subject = $2 \
                 AND valid_to IS NULL GROUP BY relation ORDER BY min(seq) LIMIT $3",
                &[&scope, &subject, &limit],
            )?
            .iter()
            .map(|row| Ok(row.try_get(0)?))
            .collect()
        })
    }

    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>> {
        self.with_conn(|conn, scope| {
            query(conn, PROFILE, &[&scope])?
                .iter()
                .map(read_profile)
                .collect()
        })
    }

    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>> {
        self.with_conn(|conn, scope| {
            query(
                conn,
                "SELECT id FROM facts WHERE scope = $1 AND source_task_id = $2 \
                 GROUP BY id ORDER BY min(seq)",
                &[&scope, &source],
            )?
            .iter()
            .map(|row| id_from_sql(row.try_get(0)?))
            .collect()
        })
    }
}

impl Postgres {
    /// The valid versions of `subject`, newest first, at most `limit`
    /// ([`FactRead::ValidAbout`](fact_store_sql::FactRead::ValidAbout)).
    pub(crate) fn valid_about(&self, subject: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND subject = $2 \
             AND valid_to IS NULL ORDER BY seq DESC LIMIT $3"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(|conn, scope| {
            query(conn, &sql, &[&scope, &subject, &limit])?
                .iter()
                .map(|row| read_fact(row, 0))
                .collect()
        })
    }
}

//! Long-term memory on SQLite: [`MemoryRows`] for the rows of a write transaction (the
//! `aliases` and `profile` tables and the episodes' rows), and [`MemoryReads`]: the reads
//! behind [`LongTermStore`](fact_store::LongTermStore), whose `commit` is the shared order
//! of [`fact_store_sql::long_term::commit`] in one `BEGIN IMMEDIATE` transaction.

use std::collections::HashSet;

use fact_model::{FactId, ProfileField};
use rusqlite::{Connection, OptionalExtension, params};

use super::episodes;
use super::rows::SqliteRows;
use crate::codec::read_fact;
use crate::driver::Sqlite;
use crate::error::{DbError, DbResult};
use fact_store::{
    Alias, Analyzer, Episode, EpisodeExtracted, EraseReport, ExportRecord, ProfileEntry,
    SnapshotRecord, StoreResult,
};
use fact_store_sql::MemoryReads;
use fact_store_sql::codec::{
    FACT_COLUMN_COUNT, FACT_COLUMNS, batch_from_sql, id_from_sql, time_from_sql,
};
use fact_store_sql::long_term::MemoryRows;

impl MemoryRows for SqliteRows<'_> {
    fn alias_entity(&mut self, alias: &str) -> DbResult<Option<String>> {
        Ok(self
            .conn()
            .prepare_cached("SELECT entity FROM aliases WHERE scope = ?1 AND alias = ?2")?
            .query_row(params![self.scope(), alias], |row| row.get(0))
            .optional()?)
    }

    fn set_alias(&mut self, alias: &Alias) -> DbResult<()> {
        let (conn, scope) = (self.conn(), self.scope());
        // A replaced alias keeps its place in the order, as an `IndexMap` insert does.
        let replaced = conn
            .prepare_cached(
                "UPDATE aliases SET entity = ?3, at = ?4 WHERE scope = ?1 AND alias = ?2",
            )?
            .execute(params![
                scope,
                alias.alias,
                alias.entity,
                alias.at.unix_micros()
            ])?;
        if replaced == 0 {
            conn.prepare_cached(
                "INSERT INTO aliases (scope, alias, entity, at, seq) VALUES (?1, ?2, ?3, ?4, \
                 coalesce((SELECT max(seq) FROM aliases WHERE scope = ?1), 0) + 1)",
            )?
            .execute(params![
                scope,
                alias.alias,
                alias.entity,
                alias.at.unix_micros()
            ])?;
        }
        Ok(())
    }

    fn remove_alias(&mut self, alias: &str) -> DbResult<()> {
        let removed = self
            .conn()
            .prepare_cached("DELETE FROM aliases WHERE scope = ?1 AND alias = ?2")?
            .execute(params![self.scope(), alias])?;
        if removed > 0 {
            self.mark_erasing(false);
        }
        Ok(())
    }

    fn profile_versions(&mut self) -> DbResult<Vec<ProfileEntry>> {
        profile_versions(self.conn(), self.scope())
    }

    fn insert_profile(&mut self, entry: &ProfileEntry) -> DbResult<()> {
        self.conn()
            .prepare_cached("INSERT INTO profile (scope, field, text, at) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![
                self.scope(),
                entry.field.as_str(),
                entry.text,
                entry.at.unix_micros()
            ])?;
        Ok(())
    }

    fn put_episode(&mut self, episode: &Episode, analyzer: &Analyzer) -> DbResult<()> {
        episodes::put_episode(self.conn(), self.scope(), episode, analyzer)
    }

    fn episode(&mut self, id: &str) -> DbResult<Option<Episode>> {
        episodes::episode_in(self.conn(), self.scope(), id)
    }

    fn delete_episode(&mut self, id: &str) -> DbResult<bool> {
        let deleted = episodes::delete_episode(self.conn(), self.scope(), id)?;
        if deleted {
            self.mark_erasing(true);
        }
        Ok(deleted)
    }

    fn erase_scope(&mut self) -> DbResult<EraseReport> {
        SqliteRows::erase_scope(self)
    }

    fn mark_extracted(
        &mut self,
        extracted: &EpisodeExtracted,
        analyzer: &Analyzer,
    ) -> DbResult<bool> {
        let changed = self
            .conn()
            .prepare_cached(
                "UPDATE episodes SET extracted_at = ?3, title = coalesce(?4, title), \
                 summary = coalesce(?5, summary) WHERE scope = ?1 AND id = ?2",
            )?
            .execute(params![
                self.scope(),
                extracted.id,
                extracted.at.unix_micros(),
                extracted.title,
                extracted.summary
            ])?;
        if changed > 0 && (extracted.title.is_some() || extracted.summary.is_some()) {
            episodes::reindex_title(self.conn(), self.scope(), &extracted.id, analyzer)?;
        }
        Ok(changed > 0)
    }
}

/// Every alias of `scope`, in the order they were set.
fn aliases(conn: &Connection, scope: i64) -> DbResult<Vec<Alias>> {
    let mut stmt =
        conn.prepare_cached("SELECT alias, entity, at FROM aliases WHERE scope = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([scope])?;
    let mut aliases = Vec::new();
    while let Some(row) = rows.next()? {
        aliases.push(Alias {
            alias: row.get(0)?,
            entity: row.get(1)?,
            at: time_from_sql(row.get(2)?)?,
        });
    }
    Ok(aliases)
}

/// Every profile version of `scope`, oldest first.
fn profile_versions(conn: &Connection, scope: i64) -> DbResult<Vec<ProfileEntry>> {
    let mut stmt =
        conn.prepare_cached("SELECT field, text, at FROM profile WHERE scope = ?1 ORDER BY seq")?;
    let mut rows = stmt.query([scope])?;
    let mut entries = Vec::new();
    while let Some(row) = rows.next()? {
        let field: String = row.get(0)?;
        let field: ProfileField = field
            .parse()
            .map_err(|e| DbError::Corrupt(format!("stored profile field: {e}")))?;
        entries.push(ProfileEntry {
            field,
            text: row.get(1)?,
            at: time_from_sql(row.get(2)?)?,
        });
    }
    Ok(entries)
}

impl MemoryReads for Sqlite {
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> StoreResult<()>) -> StoreResult<()> {
        self.with_read_conn(|conn, scope| {
            // One deferred transaction: every read below sees one snapshot of the file.
            let tx = conn.transaction()?;
            {
                let sql = format!(
                    "SELECT {FACT_COLUMNS}, batch FROM facts WHERE scope = ?1 ORDER BY seq"
                );
                let mut stmt = tx.prepare_cached(&sql)?;
                let mut rows = stmt.query([scope])?;
                while let Some(row) = rows.next()? {
                    let fact = read_fact(row, 0)?;
                    let batch = batch_from_sql(row.get(FACT_COLUMN_COUNT)?);
                    sink(ExportRecord::Fact(SnapshotRecord { batch, fact }))
                        .map_err(DbError::Store)?;
                }
            }
            episodes::export_episodes(&tx, scope, &mut |episode| {
                sink(ExportRecord::Episode(episode))
            })?;
            for alias in aliases(&tx, scope)? {
                sink(ExportRecord::Alias(alias)).map_err(DbError::Store)?;
            }
            for entry in profile_versions(&tx, scope)? {
                sink(ExportRecord::Profile(entry)).map_err(DbError::Store)?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn aliases(&self) -> StoreResult<Vec<Alias>> {
        self.with_conn(|conn, scope| aliases(conn, scope))
    }

    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(|conn, scope| {
            let mut stmt = conn.prepare_cached(
                "SELECT relation FROM facts WHERE scope = ?1 AND subject = ?2 \
                 AND valid_to IS NULL GROUP BY relation ORDER BY min(seq) LIMIT ?3",
            )?;
            let mut rows = stmt.query(params![scope, subject, limit])?;
            let mut relations = Vec::new();
            while let Some(row) = rows.next()? {
                relations.push(row.get(0)?);
            }
            Ok(relations)
        })
    }

    fn profile_history(&self) -> StoreResult<Vec<ProfileEntry>> {
        self.with_conn(|conn, scope| profile_versions(conn, scope))
    }

    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>> {
        self.with_conn(|conn, scope| {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM facts WHERE scope = ?1 AND source_task_id = ?2 ORDER BY seq",
            )?;
            let mut rows = stmt.query(params![scope, source])?;
            let mut ids: Vec<FactId> = Vec::new();
            let mut seen: HashSet<FactId> = HashSet::new();
            while let Some(row) = rows.next()? {
                let id = id_from_sql(row.get(0)?)?;
                if seen.insert(id) {
                    ids.push(id);
                }
            }
            Ok(ids)
        })
    }
}

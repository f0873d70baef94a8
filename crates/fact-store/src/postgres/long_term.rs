//! Long-term memory on PostgreSQL: the [`MemoryRows`] of a write transaction (aliases,
//! profile versions, episodes indexed as their messages) and the [`LongTermStore`] of a
//! [`PgFactStore`].
//!
//! A message is indexed by its term document: its analyzed terms (the episode analyzer's)
//! as this scope's message-term ids, `t12 t7 t12`, from which the database generates the
//! `tsvector` its GIN index holds. Storing, replacing and deleting messages keep each
//! term's document frequency and the scope's message count and total length in the same
//! transaction, under the scope's row lock, so a search reads statistics that match the
//! rows. The schema is in `schema.rs` (version 3).

use std::collections::HashMap;

use fact_model::{FactId, Message, ProfileField, SessionFact, Timestamp};
use postgres::types::ToSql;
use postgres::{Row, Transaction};

use super::PgFactStore;
use super::rows::{PgRows, Statements, prepared};
use crate::messages;
use crate::sql::codec::{FACT_COLUMNS, id_from_sql, parse_term, time_from_sql};
use crate::sql::error::{DbError, DbResult};
use crate::sql::long_term::MemoryRows;
use crate::{
    Alias, Analyzer, Episode, EpisodeExtracted, LongTermStore, MemoryReport, MemoryWrite,
    ProfileEntry, StoreResult,
};

/// Statements in one open transaction, prepared once per connection.
pub(super) struct Db<'t, 'a> {
    tx: &'t mut Transaction<'a>,
    statements: &'t mut Statements,
}

impl<'t, 'a> Db<'t, 'a> {
    /// Statements of `tx`, prepared into (and taken from) `statements`.
    pub(super) fn new(tx: &'t mut Transaction<'a>, statements: &'t mut Statements) -> Self {
        Db { tx, statements }
    }

    /// The rows of a query.
    pub(super) fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> DbResult<Vec<Row>> {
        let statement = prepared(self.tx, self.statements, sql)?;
        Ok(self.tx.query(&statement, params)?)
    }

    /// The row of a query that gives at most one.
    pub(super) fn query_opt(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> DbResult<Option<Row>> {
        let statement = prepared(self.tx, self.statements, sql)?;
        Ok(self.tx.query_opt(&statement, params)?)
    }

    /// Runs a statement; the number of rows it changed.
    pub(super) fn execute(&mut self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> DbResult<u64> {
        let statement = prepared(self.tx, self.statements, sql)?;
        Ok(self.tx.execute(&statement, params)?)
    }
}

/// The key a text is unique by in its scope (a message term, an alias): its BLAKE3
/// digest, since a B-tree entry cannot hold a long text.
pub(super) fn text_key(text: &str) -> Vec<u8> {
    blake3::hash(text.as_bytes()).as_bytes().to_vec()
}

/// The distinct terms of an episode's title and summary, sorted: what `search_episodes`
/// matches.
pub(super) fn episode_terms(analyzer: &Analyzer, episode: &Episode) -> Vec<String> {
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
pub(super) fn index_messages(
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
fn unindex_messages(db: &mut Db<'_, '_>, scope: i64, episode: i64) -> DbResult<()> {
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

    fn put_episode(&mut self, episode: &Episode, analyzer: &Analyzer) -> DbResult<()> {
        let (mut db, scope) = self.db();
        let tags = serde_json::to_string(&episode.tags)
            .map_err(|e| DbError::Corrupt(format!("episode tags: {e}")))?;
        let terms = episode_terms(analyzer, episode);
        let created_at = episode.created_at.unix_micros();
        let extracted_at = episode.extracted_at.map(Timestamp::unix_micros);
        let n = match episode_number(&mut db, scope, &episode.id)? {
            Some(n) => {
                // Replaced: the same number (its place), its old messages unindexed.
                unindex_messages(&mut db, scope, n)?;
                db.execute(
                    "UPDATE episodes SET title = $3, summary = $4, tags = $5, created_at = $6, \
                     extracted_at = $7, terms = $8 WHERE scope = $1 AND n = $2",
                    &[
                        &scope,
                        &n,
                        &episode.title,
                        &episode.summary,
                        &tags,
                        &created_at,
                        &extracted_at,
                        &terms,
                    ],
                )?;
                n
            }
            None => {
                let row = db.query_opt(
                    "INSERT INTO episodes (scope, id, title, summary, tags, created_at, \
                     extracted_at, terms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING n",
                    &[
                        &scope,
                        &episode.id,
                        &episode.title,
                        &episode.summary,
                        &tags,
                        &created_at,
                        &extracted_at,
                        &terms,
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

impl LongTermStore for PgFactStore {
    fn commit(&self, write: MemoryWrite) -> StoreResult<MemoryReport> {
        let now = self.clock.now();
        // Tried again on conflicts: each attempt applies its own copy.
        self.write(|writer| {
            crate::sql::long_term::commit(
                writer,
                write.clone(),
                now,
                &self.config,
                &self.episode_analyzer,
            )
        })
    }

    fn aliases(&self) -> StoreResult<Vec<Alias>> {
        self.with_conn(|conn, scope| {
            super::query(conn, ALIASES, &[&scope])?
                .iter()
                .map(read_alias)
                .collect()
        })
    }

    fn profile(&self) -> StoreResult<Vec<ProfileEntry>> {
        Ok(crate::long_term::current_profile(&self.profile_history()?))
    }

    fn valid_about(&self, subject: &str, limit: usize) -> StoreResult<Vec<SessionFact>> {
        let sql = format!(
            "SELECT {FACT_COLUMNS} FROM facts WHERE scope = $1 AND subject = $2 \
             AND valid_to IS NULL ORDER BY seq DESC LIMIT $3"
        );
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(|conn, scope| {
            super::query(conn, &sql, &[&scope, &subject, &limit])?
                .iter()
                .map(|row| super::codec::read_fact(row, 0))
                .collect()
        })
    }

    fn relations_of(&self, subject: &str, limit: usize) -> StoreResult<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(|conn, scope| {
            super::query(
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
            super::query(conn, PROFILE, &[&scope])?
                .iter()
                .map(read_profile)
                .collect()
        })
    }

    fn fact_ids_from_source(&self, source: &str) -> StoreResult<Vec<FactId>> {
        self.with_conn(|conn, scope| {
            super::query(
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

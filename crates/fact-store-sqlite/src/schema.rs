//! The database schema and its forward migrations.
//!
//! `PRAGMA user_version` is the schema version. [`MIGRATIONS`] holds one function per
//! version: `MIGRATIONS[n]` takes a database from version `n` to `n + 1`, and each runs in
//! its own `BEGIN IMMEDIATE` transaction that also sets the new version, so a crash or a
//! concurrent opener never sees half a migration.
//!
//! Before anything is written, [`check`] reads the header: a file that is not SQLite fails
//! there (`SQLITE_NOTADB`, a corrupt-database error), a version newer than
//! [`SCHEMA_VERSION`] is reported, and a database of another application (version 0 with
//! tables, or another `application_id`) is refused. Nothing is ever reset or recreated.
//!
//! # Version 1
//!
//! - `scopes`: one row per scope (`spec:todo-api`, `user:alice`) with its counters: the
//!   last batch number, the batch of the latest input (never merged by compaction), the
//!   valid and stored version counts, the total term length of its valid facts, the key
//!   order counter, a generation bumped by every write (search caches compare it), and
//!   the analyzer its term documents were made with.
//! - `facts`: every version; `seq` (the rowid) is insertion order. While a version is valid
//!   it also holds `key_order` (when it joined its key's valid facts), `doc_len` and
//!   `terms`, its term document: the analyzer's terms as ids, `t12 t7 t12`. Four indexes,
//!   each touching pages at random on every batch, so no more than needed: `facts_id`
//!   (versions of an id), `facts_key` (`subject, relation, key_order`: a subject's
//!   history, and a key's valid facts in key order, since `key_order` is null once a
//!   version is invalid), `facts_valid` (the valid facts in insertion order; a selector
//!   without a subject scans them, as the in-memory store does) and
//!   `facts_valid_statement` (statement dedup).
//! - `terms`: each scope's terms with their ids and document frequency over valid facts.
//!   Ids are unique across scopes, so a term-id document never matches another scope.
//! - `fact_fts`: FTS5 over the term documents of valid facts (contentless, `rowid = seq`).
//! - `episodes` and `episode_fts`: archived conversations, FTS5 over the analyzed terms of
//!   their title and summary.
//!
//! Every table has a `scope` column (an id into `scopes`), first in every index.
//!
//! # Version 2
//!
//! - `embeddings`: the vectors a sentence-embedding model gave each fact
//!   ([`FactVectors`](fact_store::FactVectors)): `(scope, model, fact)` is unique (indexed as
//!   `scope, fact, model`, which also finds a deleted fact's rows), `dimension`
//!   the vector's length, `vector` its values as little-endian `f32` bytes (a BLOB).
//!   `seq` (the rowid, `AUTOINCREMENT` so that a number is never used twice) grows with
//!   every row written: a replacement deletes the old row and inserts a new one, so an
//!   in-process index loads only the rows after the newest it holds
//!   (`embeddings_seq`). Deleting the last version of a fact deletes its rows.
//!
//! # Version 3
//!
//! - `facts.recorded_at`: when a store recorded the version (microseconds, `NULL` for
//!   versions stored before), and `facts_source` (`scope, source_task_id`: the facts
//!   extracted from an episode).
//! - Episodes are kept once, as their messages: `messages` holds each message of each
//!   episode (`episode` is the episode's row number `n`, `turn` its position, `role`,
//!   `content`, `at` when it was said or `NULL`), with its term document (`doc_len`, and
//!   `terms`: the episode analyzer's terms as message-term ids, `t5 t9 t5`); `(scope,
//!   episode, turn)` is unique. `message_terms` holds each scope's message terms with
//!   their ids and document frequency over the scope's messages (ids unique across
//!   scopes, as in `terms`), `message_fts` is FTS5 over the term documents
//!   (contentless, `rowid` = the message's row), and `scopes` gains `message_count` and
//!   `message_len` (the scope's messages and their total length in terms): the
//!   statistics of message search. The migration moves each episode's `transcript`
//!   (JSON Lines of `{"role", "content"}` with an optional `timestamp`, `time` or
//!   `created_at`) into `messages`, skipping with a warning the lines it cannot read,
//!   and drops the `transcript` column.
//! - `aliases`: each scope's entity aliases (`alias` → `entity`, set `at`), `seq` the
//!   order they were first set (`aliases_order`); `(scope, alias)` is the key.
//! - `profile`: every version of every profile field (`field`, `text`, `at`), `seq` the
//!   order they were written (`profile_scope`).
//!
//! # Version 4
//!
//! - `applied (scope, key)`: the 16-byte digest of every transaction key the scope
//!   committed (`Transaction::with_key`), written in the transaction it names, so a
//!   transaction retried after an unknown outcome applies at most once.
//!
//! # Version 5
//!
//! - `facts.changed_generation`: the scope's generation committed by the write that last
//!   inserted or changed the row (0 for rows written before), indexed as `facts_changed
//!   (scope, changed_generation)`. A search cache a few generations behind (another
//!   connection or process wrote) replays only the rows changed after its generation.
//! - `scopes.deleted_generation`: a cache older than this cannot follow the rows, because
//!   a row it may hold is gone (a deleted row that was valid, or had changed after the
//!   cache's generation), and must load the scope again.
//! - `scopes.stamped_generation`: the generation of the last write that stamped its rows
//!   (the scope's generation when migrated). Behind `generation`, a build of an older
//!   schema wrote last, without stamps: caches reload, and the next stamped write moves
//!   `deleted_generation` up to that generation.
//!
//! # Version 6
//!
//! - `token_vectors`: the token vectors a model gave each fact
//!   ([`FactVectors::put_token_vectors`](fact_store::FactVectors::put_token_vectors)):
//!   `(scope, fact, model)` is unique (`fact` before `model`, as in `embeddings`, so
//!   deleting a fact finds its rows), `tokens` the encoded bytes (a BLOB). Deleting the
//!   last version of a fact deletes its rows, in the transaction that deletes its
//!   embeddings.
//!
//! # Version 7
//!
//! - `facts.metadata` and `episodes.metadata`: a version's or an episode's
//!   [`Metadata`](fact_model::Metadata) as a JSON object (keys sorted), `NULL` for none,
//!   which every row written before has.
//!
//! # Version 8
//!
//! - `fact_meta`: the metadata of every version, one row per key, for the filters'
//!   metadata conditions (`fact_store_sql::filter`): `seq` (the version's), `key`,
//!   `kind` (0 text, 1 number, 2 boolean) and `value` (a column without a type, holding
//!   the text, the number as a `REAL` or the boolean as 0 or 1, as the store bound it,
//!   never parsed from JSON). `(seq, key)` is the primary key (a condition on one
//!   version), `fact_meta_value` (`scope, key, kind, value`) finds the versions holding a
//!   value. The store writes the rows with the version; the trigger `fact_meta_gone`
//!   deletes them with it. The migration fills the table from `facts.metadata`.
//! - `facts_object` (`scope, object`): the facts whose object is an entity, for the
//!   neighbours of an entity (`facts_key` finds those whose subject is).
//! - `scopes.vocabulary`: moved on whenever terms are dropped. Terms are dropped only by
//!   a transaction that deletes stored text (a version, an episode, an alias): then the
//!   terms and message terms at `df` 0 go, so that no word of the deleted text stays in
//!   the file. A store caches word → term id; the cache is right only at the vocabulary
//!   it was filled at.

use rusqlite::{Connection, TransactionBehavior, params};

use super::messages::index_messages;
use crate::error::{DbError, DbResult};
use fact_store::{Analyzer, AnalyzerConfig};

/// `PRAGMA application_id` of a fact store database: "FMEM".
pub(super) const APPLICATION_ID: i64 = 0x464D_454D;

/// One migration: takes the database from version `n` to `n + 1`, inside a transaction.
type Migration = fn(&Connection) -> DbResult<()>;

/// The migrations, by the version they start from.
pub(super) const MIGRATIONS: &[Migration] = &[
    to_version_1,
    to_version_2,
    to_version_3,
    to_version_4,
    to_version_5,
    to_version_6,
    to_version_7,
    to_version_8,
];

/// The newest schema version this build knows.
pub(super) const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// What [`check`] found in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Found {
    /// A database at this version (0: empty, nothing created yet).
    Version(u32),
    /// A schema newer than [`SCHEMA_VERSION`].
    Newer(u32),
}

/// Reads the header without writing anything.
pub(super) fn check(conn: &Connection) -> DbResult<Found> {
    // One read transaction: the version and the tables come from one snapshot. Read apart,
    // a connection could see version 0, then the tables another connection's first
    // migration committed meanwhile, and take a new fact store for another application's.
    let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Deferred)?;
    let found = check_in(&tx)?;
    tx.commit()?;
    Ok(found)
}

/// [`check`] inside its read transaction.
fn check_in(conn: &Connection) -> DbResult<Found> {
    // The first read of the file: a file that is not a database fails here (SQLITE_NOTADB).
    let version: i64 = conn.pragma_query_value(None, "user_version", |row| row.get(0))?;
    let application: i64 = conn.pragma_query_value(None, "application_id", |row| row.get(0))?;
    let version = u32::try_from(version)
        .map_err(|_| DbError::Corrupt(format!("schema version {version} is not a version")))?;
    if version > SCHEMA_VERSION {
        return Ok(Found::Newer(version));
    }
    if version == 0 {
        let tables: i64 =
            conn.query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))?;
        if tables > 0 {
            return Err(DbError::Corrupt(
                "a SQLite database of another application (it has tables but no fact store \
                 schema version)"
                    .into(),
            ));
        }
    } else if application != APPLICATION_ID {
        return Err(DbError::Corrupt(format!(
            "a SQLite database of another application (application_id {application:#x})"
        )));
    }
    Ok(Found::Version(version))
}

/// Applies every migration the database lacks, one transaction each; returns the version
/// the database is at afterwards (greater than [`SCHEMA_VERSION`] if a newer build
/// migrated it meanwhile, which the caller refuses).
pub(super) fn migrate(conn: &mut Connection) -> DbResult<u32> {
    loop {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Read again under the write lock: another process may have migrated meanwhile.
        let version: i64 = tx.pragma_query_value(None, "user_version", |row| row.get(0))?;
        let version = u32::try_from(version)
            .map_err(|_| DbError::Corrupt(format!("schema version {version} is not a version")))?;
        let Some(migration) = usize::try_from(version)
            .ok()
            .and_then(|at| MIGRATIONS.get(at))
        else {
            return Ok(version);
        };
        migration(&tx)?;
        tx.pragma_update(None, "user_version", version + 1)?;
        tx.commit()?;
    }
}

pub(super) fn to_version_1(conn: &Connection) -> DbResult<()> {
    conn.pragma_update(None, "application_id", APPLICATION_ID)?;
    conn.execute_batch(
        "CREATE TABLE scopes (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            last_batch INTEGER NOT NULL DEFAULT 0,
            newest_input_batch INTEGER NOT NULL DEFAULT 0,
            valid_count INTEGER NOT NULL DEFAULT 0,
            stored_count INTEGER NOT NULL DEFAULT 0,
            total_len INTEGER NOT NULL DEFAULT 0,
            next_key_order INTEGER NOT NULL DEFAULT 0,
            generation INTEGER NOT NULL DEFAULT 0,
            analyzer TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE facts (
            seq INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            id INTEGER NOT NULL,
            subject TEXT NOT NULL,
            relation TEXT NOT NULL,
            object TEXT NOT NULL,
            tags TEXT NOT NULL,
            valid_from INTEGER NOT NULL,
            valid_to INTEGER,
            source_task_id TEXT NOT NULL,
            source_role TEXT NOT NULL,
            confidence REAL NOT NULL,
            statement TEXT,
            folded TEXT,
            superseded_by INTEGER,
            batch INTEGER NOT NULL,
            key_order INTEGER,
            doc_len INTEGER,
            terms TEXT
        );
        CREATE INDEX facts_id ON facts(scope, id);
        CREATE INDEX facts_key ON facts(scope, subject, relation, key_order);
        CREATE INDEX facts_valid ON facts(scope) WHERE valid_to IS NULL;
        CREATE INDEX facts_valid_statement ON facts(scope, folded)
            WHERE valid_to IS NULL AND folded IS NOT NULL;
        CREATE TABLE terms (
            id INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            term TEXT NOT NULL,
            df INTEGER NOT NULL DEFAULT 0,
            UNIQUE (scope, term)
        );
        CREATE VIRTUAL TABLE fact_fts USING fts5(
            terms, content='', contentless_delete=1, detail=none, tokenize='ascii'
        );
        CREATE TABLE episodes (
            n INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            id TEXT NOT NULL,
            title TEXT NOT NULL,
            summary TEXT NOT NULL,
            transcript TEXT NOT NULL,
            tags TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            extracted_at INTEGER,
            UNIQUE (scope, id)
        );
        CREATE INDEX episodes_created ON episodes(scope, created_at);
        CREATE VIRTUAL TABLE episode_fts USING fts5(
            terms, content='', contentless_delete=1, tokenize=\"unicode61 tokenchars ':'\"
        );",
    )?;
    Ok(())
}

pub(super) fn to_version_2(conn: &Connection) -> DbResult<()> {
    conn.execute_batch(
        "CREATE TABLE embeddings (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            model TEXT NOT NULL,
            fact INTEGER NOT NULL,
            dimension INTEGER NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (scope, fact, model)
        );
        CREATE INDEX embeddings_seq ON embeddings(scope, model, seq);",
    )?;
    Ok(())
}

fn to_version_3(conn: &Connection) -> DbResult<()> {
    conn.execute_batch(
        "ALTER TABLE facts ADD COLUMN recorded_at INTEGER;
        CREATE INDEX facts_source ON facts(scope, source_task_id);
        ALTER TABLE scopes ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE scopes ADD COLUMN message_len INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE message_terms (
            id INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            term TEXT NOT NULL,
            df INTEGER NOT NULL DEFAULT 0,
            UNIQUE (scope, term)
        );
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            episode INTEGER NOT NULL,
            turn INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            at INTEGER,
            doc_len INTEGER NOT NULL,
            terms TEXT NOT NULL,
            UNIQUE (scope, episode, turn)
        );
        CREATE VIRTUAL TABLE message_fts USING fts5(
            terms, content='', contentless_delete=1, detail=none, tokenize='ascii'
        );
        CREATE TABLE aliases (
            scope INTEGER NOT NULL REFERENCES scopes(id),
            alias TEXT NOT NULL,
            entity TEXT NOT NULL,
            at INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (scope, alias)
        ) WITHOUT ROWID;
        CREATE INDEX aliases_order ON aliases(scope, seq);
        CREATE TABLE profile (
            seq INTEGER PRIMARY KEY,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            field TEXT NOT NULL,
            text TEXT NOT NULL,
            at INTEGER NOT NULL
        );
        CREATE INDEX profile_scope ON profile(scope, seq);",
    )?;
    // Episodes are analyzed with the default configuration, whatever the scope's facts use.
    let analyzer = Analyzer::new(AnalyzerConfig::default());
    let episodes: Vec<(i64, i64, String, String)> = conn
        .prepare("SELECT scope, n, id, transcript FROM episodes ORDER BY scope, n")?
        .query_map([], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (scope, n, id, transcript) in episodes {
        let messages = fact_store_sql::codec::parse_transcript(&id, &transcript);
        index_messages(conn, scope, n, &messages, &analyzer)?;
    }
    conn.execute_batch("ALTER TABLE episodes DROP COLUMN transcript;")?;
    Ok(())
}

fn to_version_4(conn: &Connection) -> DbResult<()> {
    conn.execute_batch(
        "CREATE TABLE applied (
            scope INTEGER NOT NULL REFERENCES scopes(id),
            key BLOB NOT NULL,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID;",
    )?;
    Ok(())
}

fn to_version_5(conn: &Connection) -> DbResult<()> {
    // Adding a column with a constant default rewrites nothing; the index is built once.
    conn.execute_batch(
        "ALTER TABLE facts ADD COLUMN changed_generation INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE scopes ADD COLUMN deleted_generation INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE scopes ADD COLUMN stamped_generation INTEGER NOT NULL DEFAULT 0;
        UPDATE scopes SET stamped_generation = generation;
        CREATE INDEX facts_changed ON facts(scope, changed_generation);",
    )?;
    Ok(())
}

fn to_version_6(conn: &Connection) -> DbResult<()> {
    conn.execute_batch(
        "CREATE TABLE token_vectors (
            scope INTEGER NOT NULL REFERENCES scopes(id),
            model TEXT NOT NULL,
            fact INTEGER NOT NULL,
            tokens BLOB NOT NULL,
            UNIQUE (scope, fact, model)
        );",
    )?;
    Ok(())
}

fn to_version_7(conn: &Connection) -> DbResult<()> {
    // Nullable columns without a default: adding them rewrites nothing.
    conn.execute_batch(
        "ALTER TABLE facts ADD COLUMN metadata TEXT;
        ALTER TABLE episodes ADD COLUMN metadata TEXT;",
    )?;
    Ok(())
}

fn to_version_8(conn: &Connection) -> DbResult<()> {
    conn.execute_batch(
        "CREATE TABLE fact_meta (
            seq INTEGER NOT NULL,
            scope INTEGER NOT NULL REFERENCES scopes(id),
            key TEXT NOT NULL,
            kind INTEGER NOT NULL,
            value NOT NULL,
            PRIMARY KEY (seq, key)
        ) WITHOUT ROWID;
        CREATE INDEX fact_meta_value ON fact_meta(scope, key, kind, value);
        CREATE INDEX facts_object ON facts(scope, object);
        ALTER TABLE scopes ADD COLUMN vocabulary INTEGER NOT NULL DEFAULT 0;
        CREATE TRIGGER fact_meta_gone AFTER DELETE ON facts
        BEGIN
            DELETE FROM fact_meta WHERE seq = old.seq;
        END;",
    )?;
    // Every version stored with metadata before: its rows, from its JSON. A row whose
    // metadata does not read is left without (reading its fact reports it corrupt).
    let mut select =
        conn.prepare("SELECT seq, scope, metadata FROM facts WHERE metadata IS NOT NULL")?;
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        let (seq, scope, text): (i64, i64, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        match fact_store_sql::codec::metadata_from_text::<rusqlite::Error>(Some(&text)) {
            Ok(metadata) => write_fact_meta(conn, seq, scope, &metadata)?,
            Err(e) => tracing::warn!(seq, "metadata left out of fact_meta: {e:?}"),
        }
    }
    Ok(())
}

/// Writes the `fact_meta` rows of version `seq` of `scope` (none for empty metadata).
pub(super) fn write_fact_meta(
    conn: &Connection,
    seq: i64,
    scope: i64,
    metadata: &fact_model::Metadata,
) -> DbResult<()> {
    if metadata.is_empty() {
        return Ok(());
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO fact_meta (seq, scope, key, kind, value) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (key, value) in metadata.iter() {
        let (kind, value) = match value {
            fact_model::MetaValue::String(text) => (0, rusqlite::types::Value::Text(text.clone())),
            fact_model::MetaValue::Number(number) => (1, rusqlite::types::Value::Real(*number)),
            fact_model::MetaValue::Bool(flag) => {
                (2, rusqlite::types::Value::Integer(i64::from(*flag)))
            }
        };
        insert.execute(params![seq, scope, key, kind, value])?;
    }
    Ok(())
}

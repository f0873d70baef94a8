//! The PostgreSQL schema and its forward migrations.
//!
//! Everything lives in one PostgreSQL schema (`factmem` by default, see
//! [`PgOptions::schema`](super::PgOptions::schema)), so the store shares a database with
//! other applications without touching their tables. `schema_version` holds the version;
//! [`MIGRATIONS`]`[n]` takes the database from version `n` to `n + 1`. Each migration runs
//! in its own transaction that first takes a transaction-scoped advisory lock, reads the
//! version again under it and sets the new one, so openers racing on an empty database
//! migrate it once, and none ever sees half a migration. A version newer than
//! [`SCHEMA_VERSION`] is reported, and nothing is written.
//!
//! # Version 1
//!
//! The tables of the SQLite store (see its schema), with these differences:
//!
//! - `scope` is the first column of every table's primary key and of every index, so a
//!   deployment that outgrows one server can distribute every table by `scope` (Citus:
//!   `scope` as the distribution column; `docs/architecture.md`).
//! - Long texts are indexed by 64-bit hashes (`hashtextextended`), never by value: a
//!   B-tree entry holds at most about 2.7 kB, and subjects, statements and terms have no
//!   length limit. Every lookup compares the text itself after the hash.
//! - `terms_tsv` is a `tsvector` generated from the term document (`t12 t7 t12`, the
//!   analyzer's terms as ids) with a GIN index over `(scope, terms_tsv)` for the valid
//!   facts: full-text candidates in the database, ranked from the same inputs as every
//!   other store.
//! - The temporal invariants are constraints, so they hold whatever the number of writers:
//!   at most one valid version of a triple (`facts_valid_id`, a partial unique index),
//!   and the valid facts of a key all come from one batch (`facts_valid_key_batch`, an
//!   exclusion constraint checked at commit), which with one fact per key in a batch is
//!   at most one valid fact per key.
//! - Episodes keep their analyzed terms as a `text[]` with a GIN index: the candidates of
//!   an episode search are the episodes holding any query term (`&&`).
//! - Every row a write inserts or changes records the scope's generation that write
//!   commits (`changed_generation`), and a write that deletes rows records it in
//!   `scopes.deleted_generation`: a search cache a few generations behind fetches only the
//!   rows changed since (many writers, one scope), and reloads only after deletions.
//!
//! # Version 2
//!
//! - `embeddings`: the vectors a sentence-embedding model gave each fact
//!   ([`FactVectors`](crate::FactVectors)), as in the SQLite schema: the primary key
//!   `(scope, fact, model)` (one vector per fact and model; `fact` before `model` so that
//!   deleting a fact finds its rows), `dimension`, and `vector` as little-endian `f32`
//!   bytes in a `bytea` stored without compression attempts (`STORAGE EXTERNAL`: the
//!   values do not compress). `seq` (an identity) is given anew whenever a row is
//!   written; writes of a scope's embeddings hold the scope's row lock, so within a scope
//!   `seq` grows in commit order and an in-process index loads only the rows after the
//!   newest it holds (`embeddings_seq`). Deleting the last version of a fact deletes its
//!   rows in the same transaction.

use postgres::Client;

use crate::sql::error::{DbError, DbResult};

/// One migration: takes the database from version `n` to `n + 1`, inside a transaction.
type Migration = fn(&mut postgres::Transaction<'_>) -> Result<(), postgres::Error>;

/// The migrations, by the version they start from.
const MIGRATIONS: &[Migration] = &[to_version_1, to_version_2];

/// The newest schema version this build knows.
pub(super) const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// The advisory lock every migration takes ("FMEM" and 1).
const MIGRATION_LOCK: i64 = 0x464D_454D_0000_0001;

/// Brings the database to [`SCHEMA_VERSION`]; `Ok(Err(found))` when it holds a newer
/// schema (nothing is written then).
pub(super) fn migrate(client: &mut Client, schema: &str) -> DbResult<Result<(), u32>> {
    loop {
        let mut tx = client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
        let version = current_version(&mut tx, schema)?;
        if version > SCHEMA_VERSION {
            return Ok(Err(version));
        }
        let Some(migration) = usize::try_from(version)
            .ok()
            .and_then(|at| MIGRATIONS.get(at))
        else {
            tx.commit()?;
            return Ok(Ok(()));
        };
        if version == 0 {
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {schema};
                 CREATE TABLE {schema}.schema_version (version INTEGER NOT NULL);
                 INSERT INTO {schema}.schema_version VALUES (0);"
            ))?;
        }
        migration(&mut tx)?;
        let next = i32::try_from(version + 1).unwrap_or(i32::MAX);
        tx.execute(
            &format!("UPDATE {schema}.schema_version SET version = $1"),
            &[&next],
        )?;
        tx.commit()?;
    }
}

/// The version of the store's schema (0: none yet).
fn current_version(tx: &mut postgres::Transaction<'_>, schema: &str) -> DbResult<u32> {
    let table = format!("{schema}.schema_version");
    let exists: Option<String> = tx
        .query_one("SELECT to_regclass($1)::text", &[&table])?
        .try_get(0)?;
    if exists.is_none() {
        return Ok(0);
    }
    let version: Option<i32> = tx
        .query_opt(&format!("SELECT version FROM {table}"), &[])?
        .map(|row| row.try_get(0))
        .transpose()?;
    let version = version.unwrap_or(0);
    u32::try_from(version)
        .map_err(|_| DbError::Corrupt(format!("schema version {version} is not a version")))
}

fn to_version_1(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    // Both extensions are "trusted" (PostgreSQL 13+): a database owner may create them.
    // btree_gist: the exclusion constraint mixes `=` and `<>` on integers; btree_gin: the
    // full-text index leads with `scope`. They live in a schema of their own, shared by
    // every store schema of the database, so dropping one store schema never takes them
    // (and the other schemas' constraints) along.
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS factmem_ext;
        CREATE EXTENSION IF NOT EXISTS btree_gist SCHEMA factmem_ext;
        CREATE EXTENSION IF NOT EXISTS btree_gin SCHEMA factmem_ext;
        CREATE TABLE scopes (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            last_batch BIGINT NOT NULL DEFAULT 0,
            newest_input_batch BIGINT NOT NULL DEFAULT 0,
            valid_count BIGINT NOT NULL DEFAULT 0,
            stored_count BIGINT NOT NULL DEFAULT 0,
            total_len BIGINT NOT NULL DEFAULT 0,
            next_key_order BIGINT NOT NULL DEFAULT 0,
            generation BIGINT NOT NULL DEFAULT 0,
            deleted_generation BIGINT NOT NULL DEFAULT 0,
            analyzer TEXT NOT NULL DEFAULT ''
        );
        CREATE TABLE facts (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            id BIGINT NOT NULL,
            subject TEXT NOT NULL,
            relation TEXT NOT NULL,
            object TEXT NOT NULL,
            tags TEXT NOT NULL,
            valid_from BIGINT NOT NULL,
            valid_to BIGINT,
            source_task_id TEXT NOT NULL,
            source_role TEXT NOT NULL,
            confidence DOUBLE PRECISION NOT NULL,
            statement TEXT,
            folded TEXT,
            superseded_by BIGINT,
            batch BIGINT NOT NULL,
            key_order BIGINT,
            doc_len BIGINT,
            terms TEXT,
            changed_generation BIGINT NOT NULL DEFAULT 0,
            subject_hash BIGINT GENERATED ALWAYS AS (hashtextextended(subject, 0)) STORED,
            key_hash BIGINT GENERATED ALWAYS AS
                (hashtextextended(relation, hashtextextended(subject, 0))) STORED,
            terms_tsv TSVECTOR GENERATED ALWAYS AS
                (to_tsvector('simple', coalesce(terms, ''))) STORED,
            PRIMARY KEY (scope, seq),
            CONSTRAINT facts_valid_key_batch EXCLUDE USING gist
                (scope WITH =, key_hash WITH =, batch WITH <>) WHERE (valid_to IS NULL)
                DEFERRABLE INITIALLY DEFERRED
        );
        CREATE INDEX facts_id ON facts (scope, id);
        CREATE UNIQUE INDEX facts_valid_id ON facts (scope, id) WHERE valid_to IS NULL;
        CREATE INDEX facts_subject ON facts (scope, subject_hash);
        CREATE INDEX facts_key ON facts (scope, key_hash, key_order) WHERE valid_to IS NULL;
        CREATE INDEX facts_valid ON facts (scope, seq) WHERE valid_to IS NULL;
        CREATE INDEX facts_history ON facts (scope, seq) WHERE valid_to IS NOT NULL;
        CREATE INDEX facts_valid_statement ON facts (scope, hashtextextended(folded, 0))
            WHERE valid_to IS NULL AND folded IS NOT NULL;
        CREATE INDEX facts_terms ON facts USING gin (scope, terms_tsv) WHERE valid_to IS NULL;
        CREATE INDEX facts_changed ON facts (scope, changed_generation);
        CREATE TABLE terms (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            id BIGINT GENERATED ALWAYS AS IDENTITY,
            term TEXT NOT NULL,
            df BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (scope, id)
        );
        CREATE INDEX terms_term ON terms (scope, hashtextextended(term, 0));
        CREATE TABLE episodes (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            n BIGINT GENERATED ALWAYS AS IDENTITY,
            id TEXT NOT NULL,
            title TEXT NOT NULL,
            summary TEXT NOT NULL,
            transcript TEXT NOT NULL,
            tags TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            extracted_at BIGINT,
            terms TEXT[] NOT NULL,
            id_hash BIGINT GENERATED ALWAYS AS (hashtextextended(id, 0)) STORED,
            PRIMARY KEY (scope, n)
        );
        CREATE INDEX episodes_id ON episodes (scope, id_hash);
        CREATE INDEX episodes_created ON episodes (scope, created_at, n);
        CREATE INDEX episodes_terms ON episodes USING gin (scope, terms);",
    )
}

fn to_version_2(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    tx.batch_execute(
        "CREATE TABLE embeddings (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            fact BIGINT NOT NULL,
            model TEXT NOT NULL,
            seq BIGINT GENERATED BY DEFAULT AS IDENTITY,
            dimension INTEGER NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (scope, fact, model)
        );
        ALTER TABLE embeddings ALTER COLUMN vector SET STORAGE EXTERNAL;
        CREATE INDEX embeddings_seq ON embeddings (scope, model, seq);",
    )
}

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
//!   ([`FactVectors`](fact_store::FactVectors)), as in the SQLite schema: the primary key
//!   `(scope, fact, model)` (one vector per fact and model; `fact` before `model` so that
//!   deleting a fact finds its rows), `dimension`, and `vector` as little-endian `f32`
//!   bytes in a `bytea` stored without compression attempts (`STORAGE EXTERNAL`: the
//!   values do not compress). `seq` (an identity) is given anew whenever a row is
//!   written; writes of a scope's embeddings hold the scope's row lock, so within a scope
//!   `seq` grows in commit order and an in-process index loads only the rows after the
//!   newest it holds (`embeddings_seq`). Deleting the last version of a fact deletes its
//!   rows in the same transaction.
//!
//! # Version 3
//!
//! Long-term memory ([`LongTermStore`](fact_store::LongTermStore)) beside the facts:
//!
//! - `facts.recorded_at` (microseconds; `NULL` for the rows written before, which read back
//!   as facts without a recorded time) and `facts_source` over `(scope, source_task_id)`
//!   (the facts extracted from an episode; a source task id has at most 200 characters, so
//!   it is indexed by value).
//! - Episodes are kept once, as their messages: `messages (scope, episode, turn)` (the
//!   episode's row number `n`, the message's place in it) with `role`, `content`, `at`
//!   (microseconds, `NULL` when the transcript gave no time), `doc_len` (the message's
//!   length in analyzed terms, repeats counted) and `terms`, its term document as this
//!   scope's message-term ids (`t12 t7 t12`), from which `terms_tsv` is generated with a GIN
//!   index over `(scope, terms_tsv)`: the candidates of a message search, as the facts'
//!   term documents are (positions stripped: only membership is asked, and the counts come
//!   from `terms`). `episodes.transcript` is gone: the migration moves each transcript
//!   (JSON Lines of `{"role", "content"}` with an optional `timestamp`, `time` or
//!   `created_at`) into `messages`, one row per line it can parse (a line it cannot parse
//!   is skipped with a warning), then drops the column.
//! - `message_terms (scope, id)`: the scope's analyzed message terms with their document
//!   frequency `df` (how many messages hold the term). A term is unique within its scope
//!   by `term_key`, the BLAKE3 digest of the term (32 bytes, computed by the store): a
//!   word has no length limit and a B-tree entry holds at most about 2.7 kB.
//! - `scopes.message_count` and `scopes.message_len`: the scope's number of messages and
//!   their total length in analyzed terms. A write of messages holds the scope's row lock
//!   (as a write of facts does), so the statistics, the document frequencies and the rows
//!   always agree.
//! - `aliases (scope, alias_key)`: `alias` (its BLAKE3 digest `alias_key`, for the same
//!   reason), `entity`, `at` and `seq`, the order in which the alias was first set (an
//!   identity that replacing an alias keeps, so the aliases list in that order).
//!
//! # Version 4
//!
//! - `applied (scope, key)`: the 16-byte digest of every transaction key the scope
//!   committed (`Transaction::with_key`), written in the transaction it names and checked
//!   under the scope's row lock, so a transaction retried after an unknown outcome (a
//!   COMMIT whose reply was lost) applies at most once.
//! - `profile (scope, seq)`: every version of a profile field (`field`, `text`, `at`),
//!   `seq` giving their order.
//!
//! # Version 5
//!
//! - `token_vectors`: the token vectors a model gave each fact
//!   ([`FactVectors::put_token_vectors`](fact_store::FactVectors::put_token_vectors)), as in
//!   the SQLite schema: the primary key `(scope, fact, model)` (`fact` before `model` so
//!   that deleting a fact finds its rows), `tokens` the encoded bytes in a `bytea` stored
//!   without compression attempts (`STORAGE EXTERNAL`). Writes hold the scope's row lock,
//!   as writes of embeddings and facts do, so a row is never written for a fact whose
//!   last version a concurrent write deletes; that deletion deletes its rows in the same
//!   transaction.
//!
//! # Version 6
//!
//! - `facts.metadata` and `episodes.metadata`: a version's or an episode's
//!   [`Metadata`](fact_model::Metadata) as `jsonb`, `NULL` for none, which every row
//!   written before has.
//!
//! # Version 7
//!
//! - `facts_metadata`: a GIN index over `facts.metadata` (`jsonb_path_ops`), which answers
//!   the containment (`@>`) a filter's metadata equality compiles to
//!   (`fact_store_sql::filter`).
//! - `facts_object`: `(scope, hashtextextended(object, 0))`, the facts whose object is an
//!   entity, for the neighbours of an entity (`facts_subject` finds those whose subject
//!   is); a hash, as for subjects, since an object may be a long sentence.
//! - `scopes.vocabulary`: moved on when the scope's terms are deleted (an erasure). A store
//!   caches word → term id between its writes; the cache is right only at the vocabulary
//!   it was filled at (`fact_store_sql::rules::TermIds`).

use postgres::Client;

use crate::error::{DbError, DbResult};
use crate::messages::index_messages;
use crate::statements::{Db, Statements};
use fact_store::{Analyzer, AnalyzerConfig};

/// One migration: takes the database from version `n` to `n + 1`, inside a transaction.
type Migration = fn(&mut postgres::Transaction<'_>) -> DbResult<()>;

/// The migrations, by the version they start from.
const MIGRATIONS: &[Migration] = &[
    to_version_1,
    to_version_2,
    to_version_3,
    to_version_4,
    to_version_5,
    to_version_6,
    to_version_7,
];

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

fn to_version_1(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
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
    )?;
    Ok(())
}

fn to_version_2(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
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
    )?;
    Ok(())
}

/// How many episodes the move of transcripts reads at once.
const MOVE_PAGE: i64 = 100;

fn to_version_3(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
    tx.batch_execute(
        "ALTER TABLE facts ADD COLUMN recorded_at BIGINT;
        CREATE INDEX facts_source ON facts (scope, source_task_id);
        ALTER TABLE scopes ADD COLUMN message_count BIGINT NOT NULL DEFAULT 0,
            ADD COLUMN message_len BIGINT NOT NULL DEFAULT 0;
        CREATE TABLE message_terms (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            id BIGINT GENERATED ALWAYS AS IDENTITY,
            term TEXT NOT NULL,
            term_key BYTEA NOT NULL,
            df BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (scope, id)
        );
        CREATE UNIQUE INDEX message_terms_term ON message_terms (scope, term_key);
        CREATE TABLE messages (
            scope BIGINT NOT NULL,
            episode BIGINT NOT NULL,
            turn INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            at BIGINT,
            doc_len BIGINT NOT NULL,
            terms TEXT NOT NULL,
            terms_tsv TSVECTOR GENERATED ALWAYS AS
                (strip(to_tsvector('simple', terms))) STORED,
            PRIMARY KEY (scope, episode, turn),
            FOREIGN KEY (scope, episode) REFERENCES episodes (scope, n)
        );
        CREATE INDEX messages_terms ON messages USING gin (scope, terms_tsv);
        CREATE TABLE aliases (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            alias_key BYTEA NOT NULL,
            alias TEXT NOT NULL,
            entity TEXT NOT NULL,
            at BIGINT NOT NULL,
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            PRIMARY KEY (scope, alias_key)
        );
        CREATE INDEX aliases_seq ON aliases (scope, seq);
        CREATE TABLE profile (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            seq BIGINT GENERATED ALWAYS AS IDENTITY,
            field TEXT NOT NULL,
            text TEXT NOT NULL,
            at BIGINT NOT NULL,
            PRIMARY KEY (scope, seq)
        );",
    )?;
    move_transcripts(tx)?;
    tx.batch_execute("ALTER TABLE episodes DROP COLUMN transcript;")?;
    Ok(())
}

fn to_version_4(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
    tx.batch_execute(
        "CREATE TABLE applied (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            key BYTEA NOT NULL,
            PRIMARY KEY (scope, key)
        );",
    )?;
    Ok(())
}

fn to_version_5(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
    tx.batch_execute(
        "CREATE TABLE token_vectors (
            scope BIGINT NOT NULL REFERENCES scopes(id),
            fact BIGINT NOT NULL,
            model TEXT NOT NULL,
            tokens BYTEA NOT NULL,
            PRIMARY KEY (scope, fact, model)
        );
        ALTER TABLE token_vectors ALTER COLUMN tokens SET STORAGE EXTERNAL;",
    )?;
    Ok(())
}

fn to_version_6(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
    // Nullable columns without a default: adding them rewrites nothing.
    tx.batch_execute(
        "ALTER TABLE facts ADD COLUMN metadata JSONB;
        ALTER TABLE episodes ADD COLUMN metadata JSONB;",
    )?;
    Ok(())
}

fn to_version_7(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
    tx.batch_execute(
        "CREATE INDEX facts_metadata ON facts USING gin (metadata jsonb_path_ops);
        CREATE INDEX facts_object ON facts (scope, hashtextextended(object, 0));
        ALTER TABLE scopes ADD COLUMN vocabulary BIGINT NOT NULL DEFAULT 0;",
    )?;
    Ok(())
}

/// Moves every episode's transcript into `messages`, indexed as a write of the episode
/// indexes it, a page of episodes at a time (in `(scope, n)` order).
fn move_transcripts(tx: &mut postgres::Transaction<'_>) -> DbResult<()> {
    let analyzer = Analyzer::new(AnalyzerConfig::default());
    let mut statements = Statements::new();
    let mut after: (i64, i64) = (i64::MIN, i64::MIN);
    loop {
        let page = tx.query(
            "SELECT scope, n, id, transcript FROM episodes WHERE (scope, n) > ($1, $2) \
             ORDER BY scope, n LIMIT $3",
            &[&after.0, &after.1, &MOVE_PAGE],
        )?;
        if page.is_empty() {
            return Ok(());
        }
        for row in &page {
            let (scope, n): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            let (id, transcript): (String, String) = (row.try_get(2)?, row.try_get(3)?);
            let messages = fact_store_sql::codec::parse_transcript(&id, &transcript);
            index_messages(
                &mut Db::new(tx, &mut statements),
                scope,
                n,
                &messages,
                &analyzer,
            )?;
            after = (scope, n);
        }
    }
}

//! What several subcommands share: the `--db` option (its environment variable and
//! parser, and the directory a SQLite database needs), `--embedder`'s environment
//! variable, `--tokenizer` and the `--project` check.

use std::path::Path;
use std::sync::Arc;

use clap::ValueEnum;
use clap::builder::TypedValueParser;
use dispatch_runtime::durable::Database;
use dispatch_runtime::reexports::{CharsPerToken, TokenCounter};

use crate::failure::Failure;

/// The environment variable that names the database when `--db` is not given: a SQLite
/// path or a PostgreSQL URL (for `facts mem`, before `$FACTMEM_DB`).
pub(crate) const DATABASE_URL_ENV: &str = "FACTMEM_DATABASE_URL";

/// The environment variable that names the sentence-embedding model directory when
/// `--embedder` is not given.
pub(crate) const EMBEDDER_ENV: &str = "FACTMEM_EMBEDDER";

/// The parser of `--db`: a `postgres://` or `postgresql://` URL, else a SQLite path (kept
/// as given, UTF-8 or not).
pub(crate) fn database_parser() -> impl TypedValueParser<Value = Database> {
    DatabaseParser
}

/// [`database_parser`]: a backend this build lacks (`postgres`, `sqlite`) is a usage error
/// that names the feature, and never shows the value (a URL's password).
#[derive(Debug, Clone, Copy)]
struct DatabaseParser;

impl TypedValueParser for DatabaseParser {
    type Value = Database;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Database, clap::Error> {
        Database::parse_os(value).map_err(|_| {
            let flag = arg.map_or_else(|| "--db".to_owned(), ToString::to_string);
            let url = value.to_str().is_some_and(|text| {
                let text = text.to_ascii_lowercase();
                text.starts_with("postgres://") || text.starts_with("postgresql://")
            });
            let (what, feature) = if url {
                ("a postgres:// URL names a PostgreSQL server", "postgres")
            } else {
                ("a path names a SQLite file", "sqlite")
            };
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!(
                    "{flag}: {what}, and this facts binary was built without the \
                     `{feature}` feature; build it with `--features {feature}` (a default \
                     feature of factmem-cli)\n"
                ),
            )
            .with_cmd(cmd)
        })
    }
}

/// Token counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Tokenizer {
    /// Four characters per token.
    Chars4,
    /// The o200k_base BPE (needs the `tiktoken` feature).
    O200k,
    /// The cl100k_base BPE (needs the `tiktoken` feature).
    Cl100k,
}

/// The token counter `tokenizer` names; an error when this build lacks it.
pub(crate) fn counter(tokenizer: Tokenizer) -> Result<Arc<dyn TokenCounter>, String> {
    match tokenizer {
        Tokenizer::Chars4 => Ok(Arc::new(CharsPerToken::default())),
        #[cfg(feature = "tiktoken")]
        Tokenizer::O200k => dispatch_runtime::reexports::BpeTokenCounter::o200k_base()
            .map(|c| Arc::new(c) as Arc<dyn TokenCounter>)
            .map_err(|e| e.to_string()),
        #[cfg(feature = "tiktoken")]
        Tokenizer::Cl100k => dispatch_runtime::reexports::BpeTokenCounter::cl100k_base()
            .map(|c| Arc::new(c) as Arc<dyn TokenCounter>)
            .map_err(|e| e.to_string()),
        #[cfg(not(feature = "tiktoken"))]
        Tokenizer::O200k | Tokenizer::Cl100k => Err(
            "BPE tokenizers need the `tiktoken` feature; install a build with it: \
             cargo install --path crates/facts --features tiktoken"
                .to_owned(),
        ),
    }
}

/// Checks a `--project` at start: it must exist and be a directory (a usage error, exit
/// code 2, otherwise), so a typo fails before the first request rather than at `init_run`.
pub(crate) fn check_project(project: &Path) -> Result<(), Failure> {
    match std::fs::metadata(project) {
        Ok(metadata) if metadata.is_dir() => Ok(()),
        Ok(_) => Err(Failure::usage(format!(
            "--project {}: not a directory",
            project.display()
        ))),
        Err(e) => Err(Failure::usage(format!(
            "--project {}: {e}",
            project.display()
        ))),
    }
}

/// Creates the directory of a SQLite database if needed (a server needs nothing); the
/// message says what could not be created.
pub(crate) fn create_parent(database: &Database) -> Result<(), String> {
    #[cfg(not(feature = "sqlite"))]
    let _ = database;
    #[cfg(feature = "sqlite")]
    if let Database::Sqlite(path) = database
        && let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    Ok(())
}

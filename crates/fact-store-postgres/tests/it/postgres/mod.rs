//! The conformance suite against `PgFactStore` on the server `FACTMEM_PG_URL` names, each
//! store in a scope of its own (so tests share the server and never each other's facts);
//! `only` holds what only the shared store has (constraints in the database, schemas,
//! several stores writing one scope at once); `connections` the shared pool and operations
//! stalled on the network (through `proxy`, as `lost_commit`'s lost reply); `postgres_gin`
//! runs the suite with every search answered by the database's GIN index.
//!
//! Without `FACTMEM_PG_URL` the tests are skipped with one message on stderr; under
//! `CI=true` they fail instead (`.ci/run` starts a server with `.ci/pg-server start`).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};

use fact_model::Clock;
use fact_store::conformance::Fixture;
use fact_store::{LongTermStore, SessionFactStore, StoreConfig};
use fact_store_postgres::{PgFactStore, PgOptions};

pub(crate) use crate::{fact, t};

mod connections;
mod lost_commit;
mod only;
mod proxy;

/// The server's URL; `None` outside CI when `FACTMEM_PG_URL` is unset.
pub(crate) fn server() -> Option<String> {
    if let Ok(url) = std::env::var("FACTMEM_PG_URL")
        && !url.is_empty()
    {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_URL is not set under CI=true: start a server with \
         `eval \"$(.ci/pg-server start)\"` (.ci/run does)"
    );
    static SKIPPED: Once = Once::new();
    SKIPPED.call_once(|| {
        // Straight to stderr: the test harness captures `eprintln!`.
        let _ = writeln!(
            std::io::stderr(),
            "FACTMEM_PG_URL is not set: the PostgreSQL tests are skipped; \
             `eval \"$(.ci/pg-server start)\"` starts a throwaway server and sets it"
        );
    });
    None
}

/// A scope name no other test (of this run or an earlier one) uses.
pub(crate) fn fresh_scope(name: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("test:{name}:{}:{nanos}:{n}", std::process::id())
}

/// A database of its own on the test server, for a test that cuts its connections
/// (which would cut every other test's in the shared database); dropped at the end.
pub(crate) struct OwnDatabase {
    /// The URL of the test server's own database, for the administrative statements.
    admin: String,
    name: String,
    /// The URL of this database.
    pub(crate) url: String,
}

impl OwnDatabase {
    /// Creates a fresh database on the server `url` names.
    pub(crate) fn create(url: &str, name: &str) -> OwnDatabase {
        let (address, query) = url.split_once('?').unwrap_or((url, ""));
        let (server_part, _database) = address
            .rsplit_once('/')
            .expect("FACTMEM_PG_URL names a database");
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        let name = format!(
            "factmem_{name}_{}",
            fresh_scope("").replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        )
        .to_ascii_lowercase();
        let name: String = name.chars().take(63).collect();
        let own = OwnDatabase {
            admin: url.to_owned(),
            url: format!("{server_part}/{name}{query}"),
            name,
        };
        own.admin(&format!("CREATE DATABASE {}", own.name));
        own
    }

    fn admin(&self, sql: &str) {
        let mut admin = postgres::Client::connect(&self.admin, postgres::NoTls).unwrap();
        admin.batch_execute(sql).unwrap();
    }

    /// Terminates every session of the database and refuses new ones, as a server going
    /// away does: every connection a store holds, or opens, fails.
    pub(crate) fn cut(&self) {
        self.admin(&format!(
            "ALTER DATABASE {name} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'",
            name = self.name
        ));
    }

    /// Lets connections in again.
    pub(crate) fn restore(&self) {
        self.admin(&format!(
            "ALTER DATABASE {} ALLOW_CONNECTIONS true",
            self.name
        ));
    }
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        // Not `unwrap`: a drop during a panic must not panic again.
        if let Ok(mut admin) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// Small pools: many stores run at once against one server.
pub(crate) fn options() -> PgOptions {
    PgOptions::default().with_pool_size(2)
}

/// A store of a fresh scope on the test server.
pub(crate) fn open(
    url: &str,
    config: StoreConfig,
    options: PgOptions,
    clock: Arc<dyn Clock>,
) -> PgFactStore {
    PgFactStore::open_with(url, &fresh_scope("conformance"), config, options, clock).unwrap()
}

/// The suite's stores, each in a fresh scope on the test server, opened with these
/// options; none without a server.
pub(crate) struct Postgres(pub(crate) PgOptions);

impl Fixture for Postgres {
    fn store(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn SessionFactStore>> {
        let url = server()?;
        Some(Arc::new(open(&url, config, self.0.clone(), clock)))
    }

    fn long_term(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn LongTermStore>> {
        let url = server()?;
        Some(Arc::new(open(&url, config, self.0.clone(), clock)))
    }
}

fact_store::conformance_suite!(Postgres(options()));

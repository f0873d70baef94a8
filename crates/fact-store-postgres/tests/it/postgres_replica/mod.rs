//! Read replicas (issue 24, item 4): a [`PgDatabase`] over the primary `FACTMEM_PG_URL`
//! names with the hot standby `FACTMEM_PG_REPLICA_URL` names as its read replica
//! (`.ci/pg-server start-standby`). The conformance suite runs on stores opened that way,
//! every read through the standby unless it lags (each test reads its own writes);
//! `reads` proves where reads go and what a lagging or failing replica costs.
//!
//! Without `FACTMEM_PG_REPLICA_URL` (or `FACTMEM_PG_URL`) the tests are skipped with one
//! message on stderr; under `CI=true` they fail instead (`.ci/run` starts both servers).

use std::io::Write;
use std::sync::{Arc, Once};

use fact_model::Clock;
use fact_store::conformance::Fixture;
use fact_store::{LongTermStore, SessionFactStore, StoreConfig};
use fact_store_postgres::{PgDatabase, PgOptions};

mod reads;

/// The primary's and the standby's URLs; `None` outside CI when either is unset.
pub(crate) fn servers() -> Option<(String, String)> {
    let primary = crate::postgres::server()?;
    if let Ok(replica) = std::env::var("FACTMEM_PG_REPLICA_URL")
        && !replica.is_empty()
    {
        return Some((primary, replica));
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_REPLICA_URL is not set under CI=true: start a standby with \
         `eval \"$(.ci/pg-server start-standby)\"` (.ci/run does)"
    );
    static SKIPPED: Once = Once::new();
    SKIPPED.call_once(|| {
        let _ = writeln!(
            std::io::stderr(),
            "FACTMEM_PG_REPLICA_URL is not set: the read-replica tests are skipped; \
             `eval \"$(.ci/pg-server start-standby)\"` starts a standby of the test server"
        );
    });
    None
}

/// A database over the test primary with the test standby as its replica.
pub(crate) fn database(options: PgOptions) -> Option<PgDatabase> {
    let (primary, replica) = servers()?;
    Some(PgDatabase::connect_with_replicas(&primary, &[replica], options).unwrap())
}

/// The suite's stores, each in a fresh scope of a database over the test primary with the
/// test standby as its replica; none without both servers.
struct Replica;

impl Fixture for Replica {
    fn store(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn SessionFactStore>> {
        let database = database(crate::postgres::options())?;
        let scope = crate::postgres::fresh_scope("replica");
        Some(Arc::new(database.open(&scope, config, clock).unwrap()))
    }

    fn long_term(
        &self,
        config: StoreConfig,
        clock: Arc<dyn Clock>,
    ) -> Option<Arc<dyn LongTermStore>> {
        let database = database(crate::postgres::options())?;
        let scope = crate::postgres::fresh_scope("replica");
        Some(Arc::new(database.open(&scope, config, clock).unwrap()))
    }
}

fact_store::conformance_suite!(Replica);

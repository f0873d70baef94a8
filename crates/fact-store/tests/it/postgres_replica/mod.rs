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

use fact_model::ManualClock;
use fact_store::{LongTermStore, PgDatabase, PgOptions, SessionFactStore, StoreConfig};

pub(crate) use crate::{fact, memory, store_from, t, valid_lines};

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

pub(crate) fn store_with(
    config: StoreConfig,
) -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    let database = database(crate::postgres::options())?;
    let scope = crate::postgres::fresh_scope("replica");
    Some(store_from(|clock| {
        Arc::new(database.open(&scope, config, clock).unwrap())
    }))
}

pub(crate) fn store() -> Option<(Arc<dyn SessionFactStore>, Arc<ManualClock>)> {
    store_with(StoreConfig::default())
}

pub(crate) fn long_term() -> Option<(Arc<dyn LongTermStore>, Arc<ManualClock>)> {
    let database = database(crate::postgres::options())?;
    let clock = Arc::new(ManualClock::new(t(0)));
    let store = database
        .open(
            &crate::postgres::fresh_scope("replica"),
            StoreConfig::default(),
            clock.clone(),
        )
        .unwrap();
    Some((Arc::new(store), clock))
}

conformance_suite!();

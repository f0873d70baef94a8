//! Read replicas (issue 24, item 4): a [`DatabaseHandle`](dispatch_runtime::durable::DatabaseHandle)
//! with the test standby (`FACTMEM_PG_REPLICA_URL`, `.ci/pg-server start-standby`) as
//! its replica: the memory reads its own writes at once, and its reads run on the standby.

use std::sync::Arc;

use dispatch_runtime::NewMemory;
use dispatch_runtime::ReadOptions;
use dispatch_runtime::durable::{self, Database};
use fact_model::{ManualClock, Tag, Timestamp};

use crate::concurrency::pg_server;

/// The standby's URL; `None` outside CI when it is unset.
fn standby() -> Option<String> {
    if let Ok(url) = std::env::var("FACTMEM_PG_REPLICA_URL")
        && !url.is_empty()
    {
        return Some(url);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "FACTMEM_PG_REPLICA_URL is not set under CI=true: start a standby with \
         `eval \"$(.ci/pg-server start-standby)\"` (.ci/run does)"
    );
    None
}

fn unique(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("factmem_{test}_{}_{nanos}", std::process::id())
}

#[test]
fn a_memory_on_a_handle_with_a_replica_reads_its_own_writes_from_the_standby() {
    let Some(primary) = pg_server() else { return };
    let Some(replica) = standby() else { return };
    let application = unique("replica");
    let marked = format!("{replica}?application_name={application}");
    let primary: Database = primary.parse().unwrap();
    let handle = primary
        .handle_with_replicas(&[marked.parse().unwrap()])
        .unwrap();
    let clock = Arc::new(ManualClock::new(
        Timestamp::from_unix_secs(1_800_000_000).unwrap(),
    ));
    let memory = handle
        .open_memory(
            &format!("user:{application}"),
            durable::retained(None, None),
            clock,
        )
        .unwrap();
    for n in 0..20 {
        let object = format!("framework{n}");
        memory
            .add(
                NewMemory::new("user", format!("uses_{n}"), &object)
                    .with_category(Tag::Preference)
                    .with_source("test"),
            )
            .unwrap();
        let found = memory.search(&object, 5, &ReadOptions::default()).unwrap();
        assert_eq!(found.len(), 1, "write {n} read back at once");
    }
    let mut standby = postgres::Client::connect(&replica, postgres::NoTls).unwrap();
    let sessions: i64 = standby
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap()
        .get(0);
    assert!(sessions >= 1, "the memory's reads ran on the standby");
}

#[cfg(feature = "sqlite")]
#[test]
fn replicas_need_a_postgres_database_and_postgres_replicas() {
    let sqlite: Database = "memory.db".parse().unwrap();
    let replica: Database = "postgres://u@127.0.0.1:1/db".parse().unwrap();
    let error = sqlite.handle_with_replicas(&[replica]).unwrap_err();
    assert!(
        error.to_string().contains("need a PostgreSQL database"),
        "{error}"
    );
    let primary: Database = "postgres://u@127.0.0.1:1/db".parse().unwrap();
    let error = primary
        .handle_with_replicas(&["standby.db".parse().unwrap()])
        .unwrap_err();
    assert!(
        error.to_string().contains("not a postgres:// URL"),
        "{error}"
    );
    assert!(sqlite.handle_with_replicas(&[]).is_ok());
}

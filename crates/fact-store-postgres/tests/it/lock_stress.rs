//! The kit's lock stress loop (`fact_store::conformance::stress`) on PostgreSQL, in fewer
//! rounds: its protocol, the scope row lock, is a server's (no server outside CI: the
//! test returns at once).

use std::sync::Arc;

use fact_store::SessionFactStore;
use fact_store::conformance::stress::{clock, config, stress};
use fact_store_postgres::PgFactStore;

#[test]
fn postgres_connections_on_one_scope_survive_racing_rounds() {
    let Some(url) = crate::postgres::server() else {
        return;
    };
    const ROUNDS: usize = 50;
    let scope = crate::postgres::fresh_scope("lock-stress");
    let open = || -> Arc<dyn SessionFactStore> {
        Arc::new(
            PgFactStore::open_with(&url, &scope, config(), crate::postgres::options(), clock())
                .unwrap(),
        )
    };
    let (checker, views) = (open(), vec![open(), open()]);
    let stores = |_round: usize| (checker.clone(), views.clone());
    assert_eq!(stress(ROUNDS, &stores).0, ROUNDS);
}

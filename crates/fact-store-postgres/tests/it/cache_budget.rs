//! PostgreSQL stores opened from one `PgDatabase` share its options' [`CacheBudget`]: an
//! evicted scope answers from the GIN index while its cache reloads in the background.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fact_model::ManualClock;
use fact_store::{SessionFactStore, StoreConfig, TermQuery};
use fact_store_postgres::{CacheBudget, PgDatabase, PgFactStore};

use crate::postgres::{fresh_scope, options, server};
use crate::{Overlap, fact, t};

fn lines(store: &PgFactStore, query: &TermQuery<'_>) -> Vec<(String, f64)> {
    store
        .search(query, &Overlap)
        .unwrap()
        .into_iter()
        .map(|s| (s.fact.object().to_owned(), s.score))
        .collect()
}

#[test]
fn an_evicted_scope_answers_from_the_index_and_reloads_in_the_background() {
    let Some(url) = server() else { return };
    // Room for about one scope of 200 facts.
    let budget = CacheBudget::new(120_000);
    let database =
        PgDatabase::connect_with(&url, options().with_cache_budget(budget.clone())).unwrap();
    let clock = Arc::new(ManualClock::new(t(0)));
    let open = || {
        database
            .open(
                &fresh_scope("budget"),
                StoreConfig::default(),
                clock.clone(),
            )
            .unwrap()
    };
    let (a, b) = (open(), open());
    for store in [&a, &b] {
        let batch = (0..200u32)
            .map(|n| {
                fact(
                    &format!("s{n}"),
                    "uses",
                    &format!("alpha w{} w{}", n % 17, n % 5),
                    n,
                    0,
                )
            })
            .collect();
        store.add(batch).unwrap();
    }
    let query = TermQuery::new("alpha w3 w4", 5);
    let first = lines(&a, &query);
    assert!(a.cache_bytes() > 50_000, "{}", a.cache_bytes());
    lines(&b, &query);
    assert_eq!(
        (a.cache_bytes(), budget.evictions()),
        (0, 1),
        "a was evicted"
    );
    // From the GIN index at once, the same answer; the cache comes back meanwhile.
    assert_eq!(lines(&a, &query), first);
    // Until the reload has installed a's cache and charged it (which evicts b): the
    // permit goes only after both.
    let started = Instant::now();
    while a.cache_bytes() == 0 || budget.reloading() > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never reloaded"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!((b.cache_bytes(), budget.evictions()), (0, 2));
    assert_eq!(lines(&a, &query), first);
    drop((a, b));
    assert_eq!(budget.used(), 0);
}
